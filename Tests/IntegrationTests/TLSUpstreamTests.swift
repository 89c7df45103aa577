import COpenSSL
@testable import FleetTokenProxy
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

    /// Stand-ins whose Fleet Engine serves TLS with the certificate the test CA signed.
    func tlsStandIns() throws -> StandInHost {
        try StandInHost(fleetEngineTLS: (cert: dir.appendingPathComponent("server.pem").path,
                                         key: dir.appendingPathComponent("server.key").path))
    }

    /// A sidecar calling `standIns`' Fleet Engine over TLS, with `arguments` added.
    func tlsSidecar(_ standIns: StandInHost, _ arguments: [String] = [], environment: [String: String] = [:]) throws -> SidecarProcess {
        try SidecarProcess(["--upstream", "https://\(standIns.fleetEngineAddress)", "--provider-url", standIns.providerTemplate] + arguments,
                           environment: environment)
    }

    func testTLSUpstreamVerifiedWithTheGivenCA() throws {
        let standIns = try tlsStandIns()
        defer { standIns.stop() }
        let sidecar = try tlsSidecar(standIns, ["--upstream-ca-file", dir.appendingPathComponent("ca.pem").path])
        defer { sidecar.stop() }
        let result = try curl(["-w", "\n%{http_code}", sidecar.baseURL + "/v1/providers/p1/vehicles/tls-1"])
        XCTAssertTrue(result.stdout.hasSuffix("\n200"), result.stdout)
        XCTAssertEqual(standIns.sync { standIns.fleetEngine.statistics.accepted }, 1)
    }

    func testTLSUpstreamWithUntrustedCertificateIsNeverSentTheCall() throws {
        let standIns = try tlsStandIns()
        defer { standIns.stop() }
        let sidecar = try tlsSidecar(standIns, ["--upstream-ca-file", dir.appendingPathComponent("other.pem").path])
        defer { sidecar.stop() }
        let result = try curl(["-w", "\n%{http_code}", sidecar.baseURL + "/v1/providers/p1/vehicles/tls-2"])
        XCTAssertTrue(result.stdout.hasSuffix("\n502"), result.stdout)
        XCTAssertTrue(result.stdout.contains("UNAVAILABLE"), result.stdout)
        XCTAssertEqual(standIns.sync { standIns.seenRequests.count }, 0)
    }

    /// Without --upstream-ca-file the system trust store decides, read once at start-up and
    /// shared by the HTTP/1.1 and HTTP/2 contexts. OpenSSL's default paths honour
    /// SSL_CERT_FILE, which names the test CA here.
    func testTLSUpstreamVerifiedWithTheSystemTrustStore() throws {
        let standIns = try tlsStandIns()
        defer { standIns.stop() }
        let sidecar = try tlsSidecar(standIns, environment: ["SSL_CERT_FILE": dir.appendingPathComponent("ca.pem").path, "SSL_CERT_DIR": dir.path])
        defer { sidecar.stop() }
        for id in ["tls-3", "tls-4"] {
            let result = try curl(["-w", "\n%{http_code}", sidecar.baseURL + "/v1/providers/p1/vehicles/\(id)"])
            XCTAssertTrue(result.stdout.hasSuffix("\n200"), result.stdout)
        }
        XCTAssertEqual(standIns.sync { standIns.fleetEngine.statistics.accepted }, 2)
    }

    /// A directory holding the test CA under its subject hash, as `/etc/ssl/certs` holds the
    /// system's (`openssl rehash`), and nothing else.
    func hashedCADirectory() throws -> String {
        let hashed = dir.appendingPathComponent("hashed")
        try FileManager.default.createDirectory(at: hashed, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: dir.appendingPathComponent("ca.pem"), to: hashed.appendingPathComponent("test-ca.pem"))
        try check(runCommand("/usr/bin/openssl", ["rehash", hashed.path]))
        return hashed.path
    }

    /// The system store found through the hashed directory alone, as on Debian: no bundle file
    /// is named, and the default one holds no test CA.
    func testTLSUpstreamVerifiedThroughTheHashedCertificateDirectory() throws {
        let standIns = try tlsStandIns()
        defer { standIns.stop() }
        let sidecar = try tlsSidecar(standIns, environment: ["SSL_CERT_DIR": try hashedCADirectory()])
        defer { sidecar.stop() }
        let result = try curl(["-w", "\n%{http_code}", sidecar.baseURL + "/v1/providers/p1/vehicles/tls-5"])
        XCTAssertTrue(result.stdout.hasSuffix("\n200"), result.stdout)
        XCTAssertEqual(standIns.sync { standIns.fleetEngine.statistics.accepted }, 1)
    }

    /// The system store reads no CA until a verification asks for one, then that CA alone; a
    /// directory without hashed names (a bundle-only system) falls back to the bundle, read
    /// whole when the store is set up.
    func testSystemStoreReadsTheDirectoryACertificateAtATime() throws {
        let hashed = try hashedCADirectory()
        let environment = ["SSL_CERT_DIR": hashed]
        let store = TrustStore.system { environment[$0] }
        try store.load()
        XCTAssertEqual(store.heldCertificates, 0)
        XCTAssertTrue(try verify(dir.appendingPathComponent("server.pem").path, against: store))
        XCTAssertEqual(store.heldCertificates, 1)
        // Another chain is looked up, not found, and nothing more is read.
        XCTAssertFalse(try verify(dir.appendingPathComponent("other.pem").path, against: store))
        XCTAssertEqual(store.heldCertificates, 1)

        let bundle = ["SSL_CERT_DIR": dir.appendingPathComponent("no-such-dir").path,
                      "SSL_CERT_FILE": dir.appendingPathComponent("ca.pem").path]
        let fallback = TrustStore.system { bundle[$0] }
        try fallback.load()
        XCTAssertEqual(fallback.heldCertificates, 1)
        XCTAssertTrue(try verify(dir.appendingPathComponent("server.pem").path, against: fallback))
    }

    /// Whether the certificate in the PEM file at `path` verifies against `store` (no host check).
    func verify(_ path: String, against store: TrustStore) throws -> Bool {
        guard let file = fopen(path, "r") else { throw SidecarError("cannot open \(path)") }
        defer { fclose(file) }
        guard let certificate = PEM_read_X509(file, nil, nil, nil) else { throw SidecarError("no certificate in \(path)") }
        defer { X509_free(certificate) }
        guard let context = X509_STORE_CTX_new() else { throw SidecarError("X509_STORE_CTX_new") }
        defer { X509_STORE_CTX_free(context) }
        guard X509_STORE_CTX_init(context, try store.x509Store(), certificate, nil) == 1 else { throw SidecarError("X509_STORE_CTX_init") }
        return X509_verify_cert(context) == 1
    }

    /// The CA file is still read at start-up: one that holds no certificate stops it, with
    /// OpenSSL's reason, before the sidecar listens.
    func testCAFileWithoutACertificateStopsStartUp() throws {
        let notACertificate = dir.appendingPathComponent("not-a-ca.pem").path
        try "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n"
            .write(toFile: notACertificate, atomically: true, encoding: .utf8)
        let env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("FLEET_TOKEN_PROXY_") }
        let result = try runCommand(SidecarProcess.binary.path, [
            "serve", "--listen", "127.0.0.1:0", "--upstream", "https://127.0.0.1:9",
            "--upstream-ca-file", notACertificate, "--provider-url", "http://127.0.0.1:9/token/{type}/{id}",
        ], environment: env)
        XCTAssertEqual(result.status, 2, result.stderr)
        XCTAssertTrue(result.stderr.contains("cannot load CA file \(notACertificate)"), result.stderr)
    }
}
