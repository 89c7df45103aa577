@testable import FleetTokenProxy
import Foundation
import XCTest

/// The flow most REST calls take (docs/CONTRACT.md §6): an HTTP/1.1 client's call to an
/// `https` upstream that agrees on `h2` by ALPN, carried by the default `auto` as one stream of
/// the multiplexed TLS connection, against a scripted HTTP/2 upstream. A call, a body streamed
/// both ways, a revoked token healed, a refused stream and one past a GOAWAY sent again, and a
/// client that reads slowly.
final class DefaultFlowTests: ScriptedUpstreamTestCase {
    private func start(_ script: @escaping @Sendable (ScriptedH2Upstream.Request, Int) -> ScriptedH2Upstream.Answer) throws {
        let certificate = try selfSignedCertificate(in: dir)
        upstream = try ScriptedH2Upstream(tls: certificate, script: script)
        sidecar = try SidecarProcess(["--upstream", "https://\(upstream.address)", "--upstream-ca-file", certificate.cert,
                                      "--provider-url", standIns.providerTemplate])
    }

    private func vehicle(_ id: String, _ verb: String = "") -> String { "/v1/providers/p/vehicles/\(id)\(verb)" }

    /// One call on a fresh connection: status and body.
    private func call(_ method: String, _ path: String, body: [UInt8]? = nil) throws -> RawClient.Response? {
        let client = try RawClient(address: sidecar.address)
        var head = "\(method) \(path) HTTP/1.1\r\nHost: x\r\n"
        if let body { head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n" }
        client.send(Array((head + "\r\n").utf8) + (body ?? []))
        return client.readResponse(timeout: 10)
    }

    func testACallIsOneStreamWithTheSidecarsOwnHeadAndTheAnswerIsRelayed() throws {
        try start { _, _ in .ok(#"{"name":"providers/p/vehicles/df-1"}"#) }
        let answer = try call("GET", vehicle("df-1"))
        XCTAssertEqual(answer?.status, 200)
        XCTAssertEqual(answer?.body, #"{"name":"providers/p/vehicles/df-1"}"#)
        XCTAssertTrue(answer?.head.lowercased().contains("content-length: 36") ?? false, answer?.head ?? "")
        let request = try XCTUnwrap(upstream.waitForRequests(1).first)
        XCTAssertEqual(request.values(":method"), ["GET"])
        XCTAssertEqual(request.values(":scheme"), ["https"])
        XCTAssertEqual(request.values(":authority"), [upstream.address])
        XCTAssertEqual(request.path, vehicle("df-1"))
        XCTAssertEqual(request.values("authorization").count, 1)
        XCTAssertTrue(request.values("authorization")[0].hasPrefix("Bearer ey"))
        XCTAssertTrue(request.values("host").isEmpty && request.values("connection").isEmpty, "\(request.fields)")
    }

    func testABodyStreamsBothWays() throws {
        let answerBody = Array(repeating: UInt8(ascii: "a"), count: 700_000)
        try start { _, _ in .answer(status: 200, body: answerBody) }
        let requestBody = Array(repeating: UInt8(ascii: "r"), count: 300_000)
        let answer = try call("PUT", vehicle("df-2"), body: requestBody)
        XCTAssertEqual(answer?.status, 200)
        XCTAssertEqual(answer?.body.utf8.count, answerBody.count)
        let request = try XCTUnwrap(upstream.waitForRequests(1).first)
        XCTAssertTrue(request.body == requestBody, "the upstream got \(request.body.count) bytes, not the 300000 sent")
        XCTAssertEqual(request.values("content-length"), ["300000"])
    }

    func testARevokedTokenIsHealedOnce() throws {
        // The first token the upstream sees is refused, as Fleet Engine refuses a revoked one.
        let tokens = Sightings()
        try start { request, _ in
            tokens.first(request.values("authorization").first ?? "") ? .answer(status: 401, body: Array(#"{"error":{"code":401}}"#.utf8)) : .ok()
        }
        let body = Array(#"{"lastLocation":{}}"#.utf8)
        let answer = try call("POST", vehicle("df-3", ":updateLocation"), body: body)
        XCTAssertEqual(answer?.status, 200, answer?.body ?? "")
        let requests = upstream.waitForRequests(2)
        XCTAssertEqual(requests.map(\.body), [body, body])
        XCTAssertEqual(standIns.sync { self.standIns.provider.fetchesByEntity[EntityKey(provider: "p", type: .vehicle, id: "df-3")] }, 2,
                       "the refused token was dropped and a fresh one fetched")
    }

    func testARefusedStreamIsSentAgainWhateverTheMethod() throws {
        try start { _, index in index == 0 ? .refuse : .ok() }
        let body = Array(#"{"a":1}"#.utf8)
        let answer = try call("POST", vehicle("df-4", ":updateLocation"), body: body)
        XCTAssertEqual(answer?.status, 200)
        XCTAssertEqual(upstream.waitForRequests(2).map(\.body), [body, body])
    }

    func testAStreamPastAGoAwayIsSentAgainOnAnotherConnection() throws {
        try start { _, index in index == 0 ? .goAwayBefore : .ok() }
        let answer = try call("POST", vehicle("df-5", ":updateLocation"), body: Array("{}".utf8))
        XCTAssertEqual(answer?.status, 200)
        let requests = upstream.waitForRequests(2)
        XCTAssertEqual(requests.count, 2)
        XCTAssertNotEqual(requests.first?.connection, requests.last?.connection, "the connection that went away takes no new stream")
    }

    func testAResetBeforeTheAnswerIsA502AndNeverSentAgain() throws {
        try start { _, _ in .reset }
        let answer = try call("PUT", vehicle("df-6"), body: Array("{}".utf8))
        XCTAssertEqual(answer?.status, 502)
        usleep(200_000)
        XCTAssertEqual(upstream.requests.count, 1)
    }

    /// A client that reads at 1 MB/s, far slower than the upstream sends: the sidecar holds back
    /// the upstream (stream credit only as the client takes the answer) and the answer arrives
    /// whole.
    func testAClientThatReadsSlowlyGetsTheWholeAnswer() throws {
        let answerBody = (0..<2_000_000).map { UInt8(truncatingIfNeeded: $0 % 251) }
        try start { _, _ in .answer(status: 200, body: answerBody) }
        let file = dir.appendingPathComponent("answer").path
        let result = try curl(["--limit-rate", "1M", "-o", file, "-w", "%{http_code}", sidecar.baseURL + vehicle("df-7")])
        XCTAssertEqual(result.stdout, "200", result.stderr)
        let body = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file)))
        XCTAssertTrue(body == answerBody, "\(body.count) of \(answerBody.count) bytes, or not the bytes sent")
    }
}
