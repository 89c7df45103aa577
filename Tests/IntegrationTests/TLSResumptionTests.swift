@testable import FleetTokenProxy
import Foundation
import Logging
import XCTest

/// TLS session resumption over real loopback sockets: a client context dials TLS 1.3 and
/// TLS 1.2 stand-in servers through the upstream pool, one new connection at a time, and
/// counts its handshakes, full and resumed.
final class TLSResumptionTests: XCTestCase {
    private var dir: URL!
    private var loop: EventLoop!
    private var servers: [BufferedHTTPServer] = []
    private var full = 0
    private var resumed = 0

    override func setUpWithError() throws {
        // As `main` does: a server writing to a connection the client already closed (a burst
        // closed together) gets EPIPE, not a signal that ends the test process.
        signal(SIGPIPE, SIG_IGN)
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("ftp-resume-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let openssl = "/usr/bin/openssl"
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: openssl), "openssl CLI missing")
        // A CA, and a certificate for 127.0.0.1 it signed (EC keys: quick to make).
        for arguments in [
            ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", path("ca.key"),
             "-out", path("ca.pem"), "-days", "1", "-subj", "/CN=resumption test CA"],
            ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", path("server.key"),
             "-out", path("server.csr"), "-subj", "/CN=127.0.0.1"],
            ["x509", "-req", "-in", path("server.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"), "-CAcreateserial",
             "-out", path("server.pem"), "-days", "1", "-extfile", path("ext.cnf")],
        ] {
            try "subjectAltName=IP:127.0.0.1\n".write(toFile: path("ext.cnf"), atomically: true, encoding: .utf8)
            let result = try runCommand(openssl, arguments)
            if result.status != 0 { throw SidecarError("openssl failed: \(result.stderr)") }
        }
        loop = try EventLoop()
    }

    override func tearDown() {
        servers.forEach { $0.close() }
        servers = []
        loop = nil
        try? FileManager.default.removeItem(at: dir)
    }

    private func path(_ name: String) -> String { dir.appendingPathComponent(name).path }

    /// A client context trusting the test CA, counting its handshakes here.
    private func clientContext() throws -> TLSContext {
        TLSContext.client(trust: try TrustStore.file(path("ca.pem"))) { [unowned self] in
            if $0 { resumed += 1 } else { full += 1 }
        }
    }

    /// Listeners on ephemeral ports sharing one server context, so one ticket key: a session
    /// from one port would be taken by the other if the client offered it.
    private func listen(ports count: Int, tls12Only: Bool) throws -> [Origin] {
        let context = try TLSContext.server(certificateFile: path("server.pem"), keyFile: path("server.key"), tls12Only: tls12Only)
        return try (0..<count).map { _ in
            let server = BufferedHTTPServer(loop: loop, tls: context) { _, respond in respond(HTTPResponse(status: 204)) }
            servers.append(server)
            let address = try server.listen(on: .inet(host: "127.0.0.1", port: 0))
            let port = UInt16(address.split(separator: ":").last!)!
            return Origin(scheme: .https, host: "127.0.0.1", port: port, hostHeader: address)
        }
    }

    /// Runs the loop until `done` or `timeout` passed; false on the timeout.
    @discardableResult
    private func run(timeout: Double = 5, until done: @escaping () -> Bool) -> Bool {
        var timedOut = false
        func check() {
            if done() { loop.stop() } else { loop.schedule(after: 0.005) { check() } }
        }
        loop.schedule(after: 0) { check() }
        let deadline = loop.schedule(after: timeout) { [loop] in
            timedOut = true
            loop!.stop()
        }
        loop.run()
        deadline.cancel()
        return !timedOut && done()
    }

    /// One new connection to `origin` through a fresh pool: waits for its handshake and for a
    /// session to be kept (TLS 1.3 tickets come after the handshake), then closes it.
    private func connectOnce(to origin: Origin, with tls: TLSContext) {
        let handshakes = full + resumed
        let pool = HTTP1UpstreamPool(loop: loop, origin: origin, tls: tls, maxConnections: 1, logger: Logger(label: "test"))
        var connected = false
        _ = pool.acquire { if case .success = $0 { connected = true } }
        XCTAssertTrue(run { connected && self.full + self.resumed == handshakes + 1 }, "no handshake with \(origin)")
        XCTAssertTrue(run { tls.cachedSessions(host: origin.host, port: origin.port) > 0 }, "no session kept for \(origin)")
        pool.close()
    }

    private func checkLaterConnectionsResume(tls12Only: Bool) throws {
        let origin = try listen(ports: 1, tls12Only: tls12Only)[0]
        let tls = try clientContext()
        for _ in 0..<4 { connectOnce(to: origin, with: tls) }
        XCTAssertEqual(full, 1)
        XCTAssertEqual(resumed, 3)
    }

    func testLaterConnectionsToATLS13OriginResume() throws {
        try checkLaterConnectionsResume(tls12Only: false)
    }

    func testLaterConnectionsToATLS12OriginResume() throws {
        try checkLaterConnectionsResume(tls12Only: true)
    }

    /// After one handshake, a burst of connections dialled together (a REST load's first
    /// moment) all resume from the session it brought back, TLS 1.3 ticket or TLS 1.2 session.
    func testABurstOfConnectionsAfterOneHandshakeAllResume() throws {
        for tls12Only in [false, true] {
            full = 0
            resumed = 0
            let origin = try listen(ports: 1, tls12Only: tls12Only)[0]
            let tls = try clientContext()
            connectOnce(to: origin, with: tls)
            let burst = 16
            let pool = HTTP1UpstreamPool(loop: loop, origin: origin, tls: tls, maxConnections: burst, logger: Logger(label: "test"))
            var connected = 0
            // Each borrower keeps its connection, so the pool dials one for every borrower.
            let tickets = (0..<burst).map { _ in pool.acquire { if case .success = $0 { connected += 1 } } }
            XCTAssertTrue(run { connected == burst && self.full + self.resumed == burst + 1 }, "tls12Only: \(tls12Only)")
            XCTAssertEqual([full, resumed], [1, burst], "tls12Only: \(tls12Only)")
            _ = tickets
            pool.close()
        }
    }

    /// Two origins behind one server context: each gets its own full handshake first, and
    /// resumes only its own sessions after.
    func testASessionIsNeverOfferedToAnotherOrigin() throws {
        for tls12Only in [false, true] {
            full = 0
            resumed = 0
            let origins = try listen(ports: 2, tls12Only: tls12Only)
            let tls = try clientContext()
            connectOnce(to: origins[0], with: tls)
            connectOnce(to: origins[0], with: tls)
            XCTAssertEqual([full, resumed], [1, 1], "tls12Only: \(tls12Only)")
            connectOnce(to: origins[1], with: tls)
            XCTAssertEqual([full, resumed], [2, 1], "the second origin shook hands in full, tls12Only: \(tls12Only)")
            connectOnce(to: origins[1], with: tls)
            connectOnce(to: origins[0], with: tls)
            XCTAssertEqual([full, resumed], [2, 3], "tls12Only: \(tls12Only)")
        }
    }

    /// The sidecar's own counts on `/metrics`: two calls over one kept-alive upstream
    /// connection are one full handshake, nothing resumed yet.
    func testTheSidecarCountsUpstreamHandshakesOnItsMetricsPage() throws {
        let standIns = try StandInHost(fleetEngineTLS: (cert: path("server.pem"), key: path("server.key")))
        defer { standIns.stop() }
        let sidecar = try SidecarProcess([
            "--upstream", "https://\(standIns.fleetEngineAddress)", "--upstream-ca-file", path("ca.pem"),
            "--provider-url", standIns.providerTemplate, "--admin-listen", "127.0.0.1:0",
        ])
        defer { sidecar.stop() }
        let admin = try XCTUnwrap(sidecar.adminAddress, sidecar.log)
        for id in ["resume-1", "resume-2"] {
            XCTAssertEqual(try httpGet(sidecar.baseURL + "/v1/providers/p1/vehicles/\(id)").status, 200)
        }
        let page = MetricsPage(text: try httpGet("http://\(admin)/metrics").body)
        // Two full handshakes: the start-up HTTP/1.1 and HTTP/2 connections, dialed together
        // before either had a session; both calls then went on the warm HTTP/1.1 connection.
        XCTAssertEqual(page.value("fleet_token_proxy_tls_handshakes_total", ["peer": "upstream", "resumed": "false"]), 2, page.text)
        XCTAssertEqual(page.value("fleet_token_proxy_tls_handshakes_total", ["resumed": "true"]), 0, page.text)
    }
}
