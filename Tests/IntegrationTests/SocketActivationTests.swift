import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Socket activation: the sidecar serves on a listening socket it is handed as fd 3 with
/// `LISTEN_FDS`/`LISTEN_PID`, and does not bind `--listen`.
final class SocketActivationTests: XCTestCase {
    var standIns: StandInHost!
    var dir: URL!

    override func setUpWithError() throws {
        standIns = try StandInHost()
        dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ftp-sa-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        standIns?.stop()
        try? FileManager.default.removeItem(at: dir)
    }

    /// `--listen` points at a socket path that must never appear: the activated socket wins.
    func serveArguments(notListening path: String) -> [String] {
        ["serve", "--upstream", "http://\(standIns.fleetEngineAddress)", "--provider-url", standIns.providerTemplate,
         "--listen", "unix:\(path)"]
    }

    func testServesOnASocketPassedBySystemdSocketActivate() throws {
        let activate = "/usr/bin/systemd-socket-activate"
        guard FileManager.default.isExecutableFile(atPath: activate) else {
            throw XCTSkip("systemd-socket-activate is not installed (scripts/install-deps --test installs systemd)")
        }
        let socketPath = dir.appendingPathComponent("proxy.sock").path
        let unused = dir.appendingPathComponent("not-bound.sock").path
        let notify = try NotifyListener()
        let child = try ServiceProcess()
        // systemd-socket-activate binds, waits for the first connection, then execs the
        // sidecar in its own process with fd 3, LISTEN_FDS=1, LISTEN_PID and LISTEN_FDNAMES.
        try child.start(activate, ["-l", socketPath, "--fdname=proxy", "-E", "NOTIFY_SOCKET=\(notify.name)",
                                   SidecarProcess.binary.path] + serveArguments(notListening: unused),
                        environment: ["PATH": "/usr/bin:/bin"])
        defer { _ = child.waitForExit(timeout: 0.1) }
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: socketPath) && Date() < deadline { usleep(20_000) }

        let answer = try httpGet("http://sidecar/v1/providers/p/trips/t1", unixSocket: socketPath)
        XCTAssertEqual(answer.status, 200, "\(answer.body)\n\(child.log)")
        XCTAssertNotNil(notify.waitFor(line: "READY=1", timeout: 5))
        XCTAssertNotNil(child.waitForLog(#"listening activation=socket address=unix:\S*proxy\.sock names=proxy "#, timeout: 1), child.log)
        XCTAssertFalse(FileManager.default.fileExists(atPath: unused), "--listen was bound too")

        child.signal(SIGTERM)
        XCTAssertEqual(child.waitForExit(timeout: 10), 0, child.log)
        // The socket belongs to whoever passed it (systemd keeps it for the next start).
        XCTAssertTrue(FileManager.default.fileExists(atPath: socketPath))
    }

    /// Starts the sidecar the way a TCP socket unit would: a Python wrapper binds `host`:0,
    /// moves the socket to fd 3, sets the variables for its own pid and execs the sidecar
    /// with `serveArguments(notListening:)` and `extra`. Logs `wrapper bound port=N`.
    func startActivated(boundTo host: String, extra: [String] = []) throws -> ServiceProcess {
        let script = """
        import os, socket, sys
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((sys.argv[1], 0))
        s.listen(64)
        if s.fileno() != 3:
            os.dup2(s.fileno(), 3)
        os.set_inheritable(3, True)
        sys.stderr.write("wrapper bound port=%d\\n" % s.getsockname()[1])
        sys.stderr.flush()
        os.environ["LISTEN_FDS"] = "1"
        os.environ["LISTEN_PID"] = str(os.getpid())
        os.environ["LISTEN_FDNAMES"] = "proxy"
        os.execv(sys.argv[2], sys.argv[2:])
        """
        let unused = dir.appendingPathComponent("not-bound.sock").path
        let child = try ServiceProcess()
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("FLEET_TOKEN_PROXY_") }
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        try child.start("/usr/bin/env", ["python3", "-c", script, host, SidecarProcess.binary.path]
                            + serveArguments(notListening: unused) + extra,
                        environment: env)
        return child
    }

    /// The same protocol over TCP, with the pid check.
    func testServesOnATCPSocketPassedAsFD3() throws {
        let child = try startActivated(boundTo: "127.0.0.1")
        defer { _ = child.waitForExit(timeout: 0.1) }
        let port = try XCTUnwrap(child.waitForLog(#"wrapper bound port=(\d+)"#), child.log)
        XCTAssertNotNil(child.waitForLog(#"listening activation=socket address=(127\.0\.0\.1:\#(port)) names=proxy "#), child.log)

        let answer = try httpGet("http://127.0.0.1:\(port)/v1/providers/p/vehicles/v1")
        XCTAssertEqual(answer.status, 200, "\(answer.body)\n\(child.log)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.appendingPathComponent("not-bound.sock").path), "--listen was bound too")
        child.signal(SIGTERM)
        XCTAssertEqual(child.waitForExit(timeout: 10), 0, child.log)
    }

    /// docs/CONTRACT.md §6 holds for adopted sockets as for `--listen`: one bound to every address is
    /// refused at start-up with one line and exit status 2.
    func testAdoptedSocketNotOnLoopbackIsRefused() throws {
        let child = try startActivated(boundTo: "0.0.0.0")
        defer { _ = child.waitForExit(timeout: 0.1) }
        XCTAssertEqual(child.waitForExit(timeout: 10), 2, child.log)
        let lines = child.log.split(separator: "\n").filter { !$0.hasPrefix("wrapper bound") }
        XCTAssertEqual(lines.count, 1, child.log)
        XCTAssertTrue(child.log.contains("--allow-non-loopback") && child.log.contains("0.0.0.0:"), child.log)
    }

    func testAdoptedSocketNotOnLoopbackIsServedWithOptIn() throws {
        let child = try startActivated(boundTo: "0.0.0.0", extra: ["--allow-non-loopback"])
        defer { _ = child.waitForExit(timeout: 0.1) }
        let port = try XCTUnwrap(child.waitForLog(#"wrapper bound port=(\d+)"#), child.log)
        XCTAssertNotNil(child.waitForLog(#"listening activation=socket address=0\.0\.0\.0:\#(port) "#), child.log)
        XCTAssertEqual(try httpGet("http://127.0.0.1:\(port)/v1/providers/p/vehicles/v1").status, 200, child.log)
        child.signal(SIGTERM)
        XCTAssertEqual(child.waitForExit(timeout: 10), 0, child.log)
    }

    func testSocketsMeantForAnotherProcessAreIgnored() throws {
        let path = dir.appendingPathComponent("own.sock").path
        let sidecar = try SidecarProcess([
            "--upstream", "http://\(standIns.fleetEngineAddress)", "--provider-url", standIns.providerTemplate, "--listen", "unix:\(path)",
        ], environment: ["LISTEN_FDS": "1", "LISTEN_PID": "1"])
        defer { sidecar.stop() }
        XCTAssertEqual(sidecar.address, "unix:\(path)", "with another process's LISTEN_PID the sidecar binds --listen")
        XCTAssertEqual(try httpGet("http://sidecar/v1/providers/p/trips/t1", unixSocket: path).status, 200)
    }
}
