import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Out of descriptors (docs/CONTRACT.md §5): the real binary under `ulimit -n 64`, with more
/// client connections than that leaves room for, pauses accepting instead of spinning, says so
/// in one line, keeps serving the connections it has, and accepts again once some close.
final class DescriptorSqueezeTests: SidecarTestCase {
    /// `serve` through `sh -c 'ulimit -n N; exec …'`: the limit holds for the sidecar alone (the
    /// PID is the sidecar's once `exec` ran), with no tool beyond a POSIX shell.
    func startSqueezable(descriptors: Int) throws -> ServiceProcess {
        let child = try ServiceProcess()
        let environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("FLEET_TOKEN_PROXY_") }
        try child.start("/bin/sh", [
            "-c", "ulimit -n \(descriptors) && exec \"$@\"", "sh", SidecarProcess.binary.path, "serve",
            "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
            "--upstream", "http://\(standIns.fleetEngineAddress)", "--provider-url", standIns.providerTemplate,
        ], environment: environment)
        return child
    }

    /// utime + stime of `pid`, in seconds (/proc/PID/stat fields 14 and 15).
    func cpuSeconds(_ pid: pid_t) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        let fields = stat[stat.range(of: ")", options: .backwards)!.upperBound...].split(separator: " ")
        let ticks = try XCTUnwrap(Double(fields[11])) + XCTUnwrap(Double(fields[12]))
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    func testOutOfDescriptorsTheListenerPausesLogsOnceServesWhatItHasAndRecovers() throws {
        let child = try startSqueezable(descriptors: 64)
        defer {
            child.signal(SIGTERM)
            _ = child.waitForExit()
        }
        let address = try XCTUnwrap(child.waitForLog(#"address=(\S+)"#), child.log)
        let admin = try XCTUnwrap(child.waitForLog(#"admin=(\S+)"#), child.log)
        let kept = try KeepAliveClient(address: address)
        XCTAssertEqual(kept.get("/v1/providers/p/vehicles/squeeze-1"), 200)

        // More connections than 64 descriptors hold: the first few dozen are accepted, the rest
        // wait in the kernel's backlog while accept() fails with EMFILE.
        var extra: [Int32] = []
        defer { extra.forEach { close($0) } }
        for _ in 0..<100 { extra.append(try connectTCP(to: address)) }
        XCTAssertNotNil(child.waitForLog("(not accepting connections for a moment)", timeout: 5), String(child.log.prefix(2000)))

        let cpuBefore = try cpuSeconds(child.pid)
        Thread.sleep(forTimeInterval: 2)
        let squeezeCPU = try cpuSeconds(child.pid) - cpuBefore
        XCTAssertLessThan(squeezeCPU, 0.5, "two seconds out of descriptors cost \(squeezeCPU) s of CPU: the accept loop spins")

        let log = child.log
        XCTAssertLessThan(log.utf8.count, 20_000, "stderr grew to \(log.utf8.count) bytes")
        XCTAssertFalse(log.contains("[warn]"), "libevent wrote to stderr itself:\n\(log.prefix(2000))")
        let lines = log.split(separator: "\n").filter { $0.contains("not accepting connections for a moment") }
        XCTAssertEqual(lines.count, 1, "one line in ten seconds:\n\(log.prefix(2000))")
        let line = String(lines.first ?? "")
        XCTAssertTrue(line.contains("the process is out of file descriptors"), line)
        XCTAssertTrue(line.contains("reason=emfile"), line)
        XCTAssertTrue(line.contains("descriptor_limit=64"), line)
        XCTAssertNotNil(line.range(of: #"descriptors_open=\d+"#, options: .regularExpression), line)

        XCTAssertEqual(kept.get("/v1/providers/p/vehicles/squeeze-1"), 200, "a connection accepted before the squeeze is served during it")

        extra.forEach { close($0) }
        extra.removeAll()
        var status: Int?
        let deadline = Date().addingTimeInterval(5)
        repeat {
            status = (try? KeepAliveClient(address: address))?.get("/v1/providers/p/vehicles/squeeze-2")
            if status == 200 { break }
            usleep(100_000)
        } while Date() < deadline
        XCTAssertEqual(status, 200, "a new connection is accepted and served once descriptors are free")

        let page = MetricsPage(text: try httpGet("http://\(admin)/metrics").body)
        let failures = try XCTUnwrap(page.value("fleet_token_proxy_accept_errors_total", ["reason": "emfile"]), page.text)
        XCTAssertGreaterThanOrEqual(failures, 1)
        XCTAssertLessThan(failures, 100, "each failure pauses accepting: few in a few seconds")
    }
}
