@testable import FleetTokenProxy
import Foundation
import XCTest

/// The access log's `status` and `fleet_token_proxy_requests_total`'s `code` say what the client
/// saw (docs/CONTRACT.md §5, "What a call is recorded as"): for gRPC the `grpc-status` it
/// received, from the upstream's trailers or trailers-only answer and from the sidecar's own
/// answers alike; for REST the HTTP status written; `cancelled` for a client that went away
/// before its answer ended, and for a REST answer cut after its head, `cut`. Against a scripted
/// HTTP/2 upstream, with curl as the client (its view of the `grpc-status` checked too).
final class RecordedOutcomeTests: SidecarTestCase {
    var upstream: ScriptedH2Upstream?
    var admin = ""

    override func tearDown() {
        super.tearDown()
        upstream?.stop()
    }

    /// The sidecar in front of a scripted h2c upstream (REST pinned to HTTP/2 as well), with the
    /// access log and the metrics on; or in front of `unreachable` when given.
    private func start(unreachable: String? = nil, _ script: @escaping @Sendable (ScriptedH2Upstream.Request, Int) -> ScriptedH2Upstream.Answer = { _, _ in .hang }) throws {
        var address = unreachable ?? ""
        if unreachable == nil {
            let scripted = try ScriptedH2Upstream(script: script)
            upstream = scripted
            address = scripted.address
        }
        sidecar = try SidecarProcess(["--upstream", "http://\(address)", "--upstream-protocol", "h2",
                                      "--provider-url", standIns.providerTemplate, "--access-log", "--admin-listen", "127.0.0.1:0"])
        admin = try XCTUnwrap(sidecar.adminAddress, sidecar.log)
    }

    private static let getVehicle = "/maps.fleetengine.v1.VehicleService/GetVehicle"
    private func vehicle(_ id: String) -> String { "/v1/providers/p/vehicles/\(id)" }

    /// A GetVehicle call over h2c for vehicle `id`; the `grpc-status` curl saw (in the head or
    /// the trailers), nil for none, and curl's exit status.
    private func grpc(_ id: String, maxTime: Double = 10) throws -> (grpcStatus: String?, exit: Int32) {
        let name = Array("providers/p/vehicles/\(id)".utf8)
        let message: [UInt8] = [0x1a, UInt8(name.count)] + name // GetVehicleRequest.name, field 3
        let frame: [UInt8] = [0, 0, 0, 0, UInt8(message.count)] + message
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("ftp-outcome-\(UUID().uuidString.prefix(8))")
        let body = scratch.appendingPathExtension("request"), dump = scratch.appendingPathExtension("head")
        defer { for file in [body, dump] { try? FileManager.default.removeItem(at: file) } }
        try Data(frame).write(to: body)
        let result = try runCommand("/usr/bin/curl", [
            "-sS", "--max-time", "\(maxTime)", "--http2-prior-knowledge", "-X", "POST", "-o", "/dev/null", "-D", dump.path,
            "-H", "content-type: application/grpc", "-H", "te: trailers", "--data-binary", "@\(body.path)",
            sidecar.baseURL + Self.getVehicle,
        ])
        let fields = (try? String(contentsOf: dump, encoding: .utf8)) ?? ""
        let status = fields.split(whereSeparator: \.isNewline).last { $0.lowercased().hasPrefix("grpc-status:") }
        return (status.map { $0.dropFirst("grpc-status:".count).trimmingCharacters(in: .whitespaces) }, result.status)
    }

    /// A REST call over h2c; curl's exit status.
    @discardableResult
    private func h2c(_ path: String, maxTime: Double = 10) throws -> Int32 {
        try runCommand("/usr/bin/curl", ["-sS", "--max-time", "\(maxTime)", "--http2-prior-knowledge", "-o", "/dev/null",
                                         sidecar.baseURL + path]).status
    }

    /// Waits (a call the client left is recorded when the sidecar notices) until the metrics
    /// count `count` calls of `protocolName` with `code`, and asserts they do.
    private func expectCounted(_ protocolName: String, _ code: String, _ count: Double = 1,
                               file: StaticString = #filePath, line: UInt = #line) throws {
        let deadline = Date().addingTimeInterval(5)
        var page = MetricsPage(text: "")
        repeat {
            page = MetricsPage(text: try httpGet("http://\(admin)/metrics").body)
            if page.value("fleet_token_proxy_requests_total", ["protocol": protocolName, "code": code]) == count { return }
            usleep(50_000)
        } while Date() < deadline
        XCTAssertEqual(page.value("fleet_token_proxy_requests_total", ["protocol": protocolName, "code": code]), count,
                       page.text.split(separator: "\n").filter { $0.hasPrefix("fleet_token_proxy_requests_total") }.joined(separator: "\n"),
                       file: file, line: line)
    }

    /// The `status` of every access-log line so far, sorted.
    private var accessLogStatuses: [String] {
        sidecar.log.split(separator: "\n").filter { $0.contains("fleet-token-proxy.access: call") }.compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix("status=") }.map { String($0.dropFirst("status=".count)) }
        }.sorted()
    }

    // MARK: gRPC: the upstream's status

    func testAGRPCCallIsCountedByTheGRPCStatusInTheUpstreamsTrailers() throws {
        try start { request, _ in
            String(decoding: request.body, as: UTF8.self).contains("missing") ? .grpc(message: nil, status: 5) : .grpc(message: [0x0a, 0], status: 0)
        }
        XCTAssertEqual(try grpc("present").grpcStatus, "0")
        XCTAssertEqual(try grpc("missing").grpcStatus, "5")
        try expectCounted("grpc", "0")
        try expectCounted("grpc", "5")
        XCTAssertNil(MetricsPage(text: try httpGet("http://\(admin)/metrics").body)
            .value("fleet_token_proxy_requests_total", ["protocol": "grpc", "code": "200"]), "counted by the HTTP status")
        XCTAssertEqual(accessLogStatuses, ["0", "5"], sidecar.log)
    }

    func testAGRPCCallIsCountedByTheGRPCStatusOfATrailersOnlyAnswer() throws {
        try start { request, _ in
            .grpcTrailersOnly(status: String(decoding: request.body, as: UTF8.self).contains("missing") ? 5 : 0)
        }
        XCTAssertEqual(try grpc("present").grpcStatus, "0")
        XCTAssertEqual(try grpc("missing").grpcStatus, "5")
        try expectCounted("grpc", "0")
        try expectCounted("grpc", "5")
        XCTAssertEqual(accessLogStatuses, ["0", "5"], sidecar.log)
    }

    /// An answer with no `grpc-status` and a head that is not 200 (a proxy's or load balancer's
    /// error page) is what the client's library makes of it: gRPC's HTTP-to-gRPC mapping.
    func testAGRPCAnswerWithAnErrorHeadAndNoGRPCStatusIsCountedByGRPCsHTTPMapping() throws {
        try start { request, _ in
            String(decoding: request.body, as: UTF8.self).contains("gone")
                ? .answer(status: 404, body: Array("not here".utf8)) : .answer(status: 503, body: Array("busy".utf8))
        }
        _ = try grpc("busy")
        _ = try grpc("gone")
        try expectCounted("grpc", "14")
        try expectCounted("grpc", "12")
        XCTAssertEqual(accessLogStatuses, ["12", "14"], sidecar.log)
    }

    /// The stream reset after the head: the sidecar resets the client's stream
    /// (INTERNAL_ERROR), which gRPC clients report as INTERNAL.
    func testAGRPCAnswerCutAfterItsHeadIsCountedInternal() throws {
        try start { _, _ in .resetAfterHead(status: 200, grpc: true) }
        let seen = try grpc("cut")
        XCTAssertNotEqual(seen.exit, 0, "curl saw a whole answer")
        try expectCounted("grpc", "13")
        XCTAssertEqual(accessLogStatuses, ["13"], sidecar.log)
    }

    // MARK: gRPC: the sidecar's own answers

    func testAGRPCCallToAnUnreachableUpstreamIsCountedUnavailable() throws {
        try start(unreachable: "127.0.0.1:9")
        XCTAssertEqual(try grpc("unreachable").grpcStatus, "14")
        try expectCounted("grpc", "14")
        XCTAssertEqual(accessLogStatuses, ["14"], sidecar.log)
    }

    func testAGRPCCallWhoseUpstreamStreamBrokeBeforeAnsweringIsCountedUnavailable() throws {
        try start { _, _ in .reset }
        XCTAssertEqual(try grpc("reset").grpcStatus, "14")
        try expectCounted("grpc", "14")
        XCTAssertEqual(accessLogStatuses, ["14"], sidecar.log)
    }

    func testAGRPCCallWhoseTokenTheProviderRefusesIsCountedPermissionDenied() throws {
        try start()
        standIns.sync { self.standIns.provider.behaviour = .status(403) }
        XCTAssertEqual(try grpc("refused").grpcStatus, "7")
        try expectCounted("grpc", "7")
        XCTAssertEqual(accessLogStatuses, ["7"], sidecar.log)
    }

    // MARK: gRPC: the client went away

    func testAGRPCCallItsClientGaveUpOnIsCountedCancelled() throws {
        try start { _, _ in .hang }
        let seen = try grpc("waits", maxTime: 1)
        XCTAssertEqual(seen.exit, 28, "curl did not time out")
        XCTAssertNil(seen.grpcStatus)
        try expectCounted("grpc", "cancelled")
        XCTAssertEqual(accessLogStatuses, ["cancelled"], sidecar.log)
    }

    // MARK: REST

    /// Passes before the change too: REST was already counted by the status written.
    func testRESTCallsAreCountedByTheStatusWritten() throws {
        try start { request, _ in
            if request.path.hasSuffix("gone") { return .answer(status: 404, body: Array("{}".utf8)) }
            if request.path.hasSuffix("broken") { return .reset }
            return .ok()
        }
        XCTAssertEqual(try httpGet(sidecar.baseURL + vehicle("here")).status, 200)
        XCTAssertEqual(try httpGet(sidecar.baseURL + vehicle("gone")).status, 404)
        XCTAssertEqual(try httpGet(sidecar.baseURL + vehicle("broken")).status, 502)
        XCTAssertEqual(try h2c(vehicle("here")), 0)
        try expectCounted("http1", "200")
        try expectCounted("http1", "404")
        try expectCounted("http1", "502")
        try expectCounted("h2", "200")
        XCTAssertEqual(accessLogStatuses, ["200", "200", "404", "502"], sidecar.log)
    }

    func testAnHTTP1CallWhoseClientLeftIsCountedCancelled() throws {
        try start { _, _ in .hang }
        do {
            // Closed at the end of this block, its call still waiting for the upstream.
            let client = try RawClient(address: sidecar.address)
            client.send("GET \(vehicle("left")) HTTP/1.1\r\nHost: x\r\n\r\n")
            XCTAssertEqual(upstream?.waitForRequests(1).count, 1, "the call was not forwarded")
        }
        try expectCounted("http1", "cancelled")
        XCTAssertEqual(accessLogStatuses, ["cancelled"], sidecar.log)
    }

    func testAnHTTP1AnswerCutAfterItsHeadIsCountedCut() throws {
        try start { _, _ in .resetAfterHead(status: 200, grpc: false) }
        let client = try RawClient(address: sidecar.address)
        client.send("GET \(vehicle("cut")) HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertNil(client.readResponse(timeout: 5), "a whole answer arrived")
        try expectCounted("http1", "cut")
        XCTAssertEqual(accessLogStatuses, ["cut"], sidecar.log)
    }

    func testAnH2RESTCallWhoseClientLeftIsCountedCancelled() throws {
        try start { _, _ in .hang }
        XCTAssertEqual(try h2c(vehicle("left"), maxTime: 1), 28, "curl did not time out")
        try expectCounted("h2", "cancelled")
        XCTAssertEqual(accessLogStatuses, ["cancelled"], sidecar.log)
    }

    func testAnH2RESTAnswerCutAfterItsHeadIsCountedCut() throws {
        try start { _, _ in .resetAfterHead(status: 200, grpc: false) }
        XCTAssertNotEqual(try h2c(vehicle("cut")), 0, "curl saw a whole answer")
        try expectCounted("h2", "cut")
        XCTAssertEqual(accessLogStatuses, ["cut"], sidecar.log)
    }
}
