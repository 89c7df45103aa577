import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `--upstream-idle-timeout` is honoured at any value the flag takes (docs/CONTRACT.md §6), for
/// both kinds of upstream connection: set to 1 s, the connection a call used is closed within
/// about a second of going idle — not at the 60 s answer bound's tick — and the pool still
/// keeps one connection ready (its replacement).
final class UpstreamIdleTimeoutTests: SidecarTestCase {
    /// The local ports of the sidecar's established TCP connections to `port` on loopback,
    /// from /proc: its own sockets (by inode, from /proc/PID/fd) in /proc/net/tcp's state 01.
    func establishedConnections(of pid: pid_t, toPort port: UInt16) -> Set<UInt16> {
        let fdDirectory = "/proc/\(pid)/fd"
        var inodes: Set<String> = []
        for name in (try? FileManager.default.contentsOfDirectory(atPath: fdDirectory)) ?? [] {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(fdDirectory)/\(name)"),
                  target.hasPrefix("socket:[") else { continue }
            inodes.insert(String(target.dropFirst("socket:[".count).dropLast()))
        }
        guard let table = readWhole("/proc/\(pid)/net/tcp") else { return [] }
        var ports: Set<UInt16> = []
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 9, fields[3] == "01", inodes.contains(String(fields[9])) else { continue }
            let local = fields[1].split(separator: ":"), remote = fields[2].split(separator: ":")
            guard remote.count == 2, UInt16(remote[1], radix: 16) == port,
                  local.count == 2, let localPort = UInt16(local[1], radix: 16) else { continue }
            ports.insert(localPort)
        }
        return ports
    }

    /// A /proc file read to its end (Foundation stops after the first read of a file whose size
    /// says 0).
    func readWhole(_ path: String) -> String? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = read(fd, &buffer, buffer.count)
            guard n > 0 else { break }
            bytes += buffer[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    func port(of address: String) throws -> UInt16 {
        try XCTUnwrap(address.split(separator: ":").last.flatMap { UInt16($0) }, address)
    }

    /// After one call, every upstream connection open then is closed within `within` seconds,
    /// and one connection to the upstream is open after that (the warm one's replacement).
    func assertIdleConnectionsClose(upstreamPort: UInt16, call: () throws -> Void, within: Double,
                                    file: StaticString = #filePath, line: UInt = #line) throws {
        let pid = sidecar.process.processIdentifier
        try call()
        let used = establishedConnections(of: pid, toPort: upstreamPort)
        XCTAssertFalse(used.isEmpty, "the call went over a connection to the upstream", file: file, line: line)
        let start = Date()
        var left = used
        while !left.isEmpty && Date().timeIntervalSince(start) < within + 3 {
            usleep(50_000)
            left = used.intersection(establishedConnections(of: pid, toPort: upstreamPort))
        }
        let waited = Date().timeIntervalSince(start)
        XCTAssertTrue(left.isEmpty, "still open \(String(format: "%.1f", waited)) s after the call: \(left)", file: file, line: line)
        XCTAssertLessThan(waited, within, "closed only after \(String(format: "%.1f", waited)) s idle", file: file, line: line)
        let deadline = Date().addingTimeInterval(2)
        while establishedConnections(of: pid, toPort: upstreamPort).isEmpty && Date() < deadline { usleep(50_000) }
        XCTAssertFalse(establishedConnections(of: pid, toPort: upstreamPort).isEmpty,
                       "the pool keeps one connection ready (WarmConnectionRule)", file: file, line: line)
        try call()
    }

    func testAnIdleHTTP1UpstreamConnectionClosesAfterOneSecond() throws {
        try startSidecar(["--upstream-protocol", "http1.1", "--upstream-idle-timeout", "1"])
        try assertIdleConnectionsClose(upstreamPort: try port(of: standIns.fleetEngineAddress), call: {
            XCTAssertEqual(try httpGet(sidecar.baseURL + "/v1/providers/p/vehicles/idle-1").status, 200)
        }, within: 2.5)
    }

    func testAnIdleHTTP2UpstreamConnectionClosesAfterOneSecond() throws {
        let upstream = try ScriptedH2Upstream { _, _ in .ok() }
        defer { upstream.stop() }
        sidecar = try SidecarProcess(["--upstream", "http://\(upstream.address)", "--provider-url", standIns.providerTemplate,
                                      "--upstream-protocol", "h2", "--upstream-idle-timeout", "1"])
        try assertIdleConnectionsClose(upstreamPort: try port(of: upstream.address), call: {
            XCTAssertEqual(try httpGet(sidecar.baseURL + "/v1/providers/p/vehicles/idle-2").status, 200)
        }, within: 2.5)
    }
}
