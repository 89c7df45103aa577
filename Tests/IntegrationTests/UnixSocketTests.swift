import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `--listen unix:/path` with `--socket-mode`: served end to end, mode applied, file removed
/// on exit.
final class UnixSocketTests: XCTestCase {
    var standIns: StandInHost!
    var dir: URL!

    override func setUpWithError() throws {
        standIns = try StandInHost()
        dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ftp-unix-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        standIns?.stop()
        try? FileManager.default.removeItem(at: dir)
    }

    func mode(of path: String) -> mode_t? {
        var st = stat()
        guard lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFSOCK else { return nil }
        return st.st_mode & 0o777
    }

    func testUnixSocketServesCurlWithItsModeAndIsRemovedOnExit() throws {
        let path = dir.appendingPathComponent("proxy.sock").path
        let sidecar = try SidecarProcess([
            "--upstream", "http://\(standIns.fleetEngineAddress)", "--provider-url", standIns.providerTemplate,
            "--listen", "unix:\(path)", "--socket-mode", "0660",
        ])
        XCTAssertEqual(sidecar.address, "unix:\(path)")
        XCTAssertEqual(mode(of: path), 0o660)
        let answer = try httpGet("http://localhost/v1/providers/p/vehicles/v1", unixSocket: path)
        XCTAssertEqual(answer.status, 200, answer.body)
        XCTAssertTrue(answer.body.contains("providers/p/vehicles/v1"), answer.body)

        XCTAssertEqual(sidecar.stop(), 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path), "the socket file outlived the process")
    }

    func testAnotherModeIsAppliedToo() throws {
        let path = dir.appendingPathComponent("private.sock").path
        let sidecar = try SidecarProcess([
            "--upstream", "http://\(standIns.fleetEngineAddress)", "--provider-url", standIns.providerTemplate,
            "--listen", "unix:\(path)", "--socket-mode", "600",
        ])
        defer { sidecar.stop() }
        XCTAssertEqual(mode(of: path), 0o600)
    }
}
