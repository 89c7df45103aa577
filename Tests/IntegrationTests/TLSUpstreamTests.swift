import FleetTokenProxy
import Foundation
import XCTest

/// An `https://` upstream: certificate verification against a CA made at test time.
final class TLSUpstreamTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("ftp-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let openssl = "/usr/bin/openssl"
        func p(_ name: String) -> String { dir.appendingPathComponent(name).path }
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: openssl), "openssl CLI missing")
        // A CA, and a server certificate for 127.0.0.1 signed by it.
        try check(runCommand(openssl, ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", p("ca.key"), "-out", p("ca.pem"),
                                "-days", "1", "-subj", "/CN=fleet-token-proxy test CA"]))
        try check(runCommand(openssl, ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", p("server.key"), "-out", p("server.csr"),
                                "-subj", "/CN=127.0.0.1"]))
        try "subjectAltName=IP:127.0.0.1\n".write(toFile: p("ext.cnf"), atomically: true, encoding: .utf8)
        try check(runCommand(openssl, ["x509", "-req", "-in", p("server.csr"), "-CA", p("ca.pem"), "-CAkey", p("ca.key"),
                                "-CAcreateserial", "-out", p("server.pem"), "-days", "1", "-extfile", p("ext.cnf")]))
        // A second, unrelated CA the upstream's certificate does not chain to.
        try check(runCommand(openssl, ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", p("other.key"), "-out", p("other.pem"),
                                "-days", "1", "-subj", "/CN=unrelated CA"]))
    }

    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    func check(_ result: (status: Int32, stdout: String, stderr: String)) throws {
        if result.status != 0 { throw SidecarError("openssl failed: \(result.stderr)") }
    }

    func testTLSUpstreamVerifiedWithTheGivenCA() throws {
        let standIns = try StandInHost(fleetEngineTLS: (cert: dir.appendingPathComponent("server.pem").path,
                                                        key: dir.appendingPathComponent("server.key").path))
        defer { standIns.stop() }
        let sidecar = try SidecarProcess([
            "--upstream", "https://\(standIns.fleetEngineAddress)",
            "--upstream-ca-file", dir.appendingPathComponent("ca.pem").path,
            "--provider-url", standIns.providerTemplate,
        ])
        defer { sidecar.stop() }
        let result = try curl(["-w", "\n%{http_code}", sidecar.baseURL + "/v1/providers/p1/vehicles/tls-1"])
        XCTAssertTrue(result.stdout.hasSuffix("\n200"), result.stdout)
        XCTAssertEqual(standIns.sync { standIns.fleetEngine.statistics.accepted }, 1)
    }

    func testTLSUpstreamWithUntrustedCertificateIsNeverSentTheCall() throws {
        let standIns = try StandInHost(fleetEngineTLS: (cert: dir.appendingPathComponent("server.pem").path,
                                                        key: dir.appendingPathComponent("server.key").path))
        defer { standIns.stop() }
        let sidecar = try SidecarProcess([
            "--upstream", "https://\(standIns.fleetEngineAddress)",
            "--upstream-ca-file", dir.appendingPathComponent("other.pem").path,
            "--provider-url", standIns.providerTemplate,
        ])
        defer { sidecar.stop() }
        let result = try curl(["-w", "\n%{http_code}", sidecar.baseURL + "/v1/providers/p1/vehicles/tls-2"])
        XCTAssertTrue(result.stdout.hasSuffix("\n502"), result.stdout)
        XCTAssertTrue(result.stdout.contains("UNAVAILABLE"), result.stdout)
        XCTAssertEqual(standIns.sync { standIns.seenRequests.count }, 0)
    }
}
