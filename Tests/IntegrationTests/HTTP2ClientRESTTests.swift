@testable import FleetTokenProxy
import Foundation
import XCTest

/// An HTTP/2 client's REST call (curl with prior knowledge, as an h2c client) on both upstream
/// protocols (docs/CONTRACT.md §6): as a stream of the HTTP/2 upstream, and as one request on
/// the HTTP/1.1 pool; the answer relayed, a revoked token healed, a body sent whole.
final class HTTP2ClientRESTTests: SidecarTestCase {
    var h1: RecordingUpstream?
    var h2: ScriptedH2Upstream?

    override func tearDown() {
        super.tearDown()
        h1?.stop()
        h2?.stop()
    }

    private func vehicle(_ id: String) -> String { "/v1/providers/p/vehicles/\(id)" }

    /// curl over h2c: the status, then the body.
    private func h2c(_ method: String, _ path: String, body: String? = nil) throws -> (status: String, body: String) {
        var arguments = ["--http2-prior-knowledge", "-X", method, "-w", "\n%{http_code}", sidecar.baseURL + path]
        if let body { arguments += ["-H", "content-type: application/json", "--data-binary", body] }
        let result = try curl(arguments)
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        return (String(lines.last ?? ""), lines.dropLast().joined(separator: "\n"))
    }

    // MARK: On the HTTP/1.1 pool

    private func startOnHTTP1(reply: @escaping @Sendable (RecordingUpstream.Request, Int) -> RecordingUpstream.Reply) throws {
        let upstream = try RecordingUpstream(reply: reply)
        h1 = upstream
        sidecar = try SidecarProcess(["--upstream", "http://\(upstream.address)", "--provider-url", standIns.providerTemplate,
                                      "--upstream-protocol", "http1.1"])
    }

    func testACallBecomesOneHTTP1RequestAndItsAnswerComesBack() throws {
        try startOnHTTP1 { _, _ in .bytes(RecordingUpstream.okJSON) }
        let answer = try h2c("PUT", vehicle("h2c-1"), body: #"{"a":1}"#)
        XCTAssertEqual(answer.status, "200")
        XCTAssertEqual(answer.body, "{}")
        let request = try XCTUnwrap(h1?.waitForRequests(1).first)
        XCTAssertEqual(request.requestLine, "PUT \(vehicle("h2c-1")) HTTP/1.1")
        XCTAssertEqual(request.body, Array(#"{"a":1}"#.utf8))
        XCTAssertEqual(request.values("authorization").count, 1)
        XCTAssertEqual(request.values("content-length"), ["7"])
    }

    func testARevokedTokenIsHealedOnTheHTTP1Pool() throws {
        try startOnHTTP1 { _, index in
            index == 0 ? .bytes(Array("HTTP/1.1 401 Unauthorized\r\nContent-Length: 2\r\n\r\n{}".utf8)) : .bytes(RecordingUpstream.okJSON)
        }
        let answer = try h2c("POST", vehicle("h2c-2") + ":updateLocation", body: #"{"b":2}"#)
        XCTAssertEqual(answer.status, "200")
        let requests = try XCTUnwrap(h1).waitForRequests(2)
        XCTAssertEqual(requests.map(\.body), [Array(#"{"b":2}"#.utf8), Array(#"{"b":2}"#.utf8)])
    }

    // MARK: On the HTTP/2 upstream

    private func startOnHTTP2(_ script: @escaping @Sendable (ScriptedH2Upstream.Request, Int) -> ScriptedH2Upstream.Answer) throws {
        let upstream = try ScriptedH2Upstream(script: script)
        h2 = upstream
        sidecar = try SidecarProcess(["--upstream", "http://\(upstream.address)", "--provider-url", standIns.providerTemplate,
                                      "--upstream-protocol", "h2"])
    }

    func testACallIsOneStreamOfTheHTTP2Upstream() throws {
        try startOnHTTP2 { _, _ in .ok(#"{"name":"h2c-3"}"#) }
        let answer = try h2c("GET", vehicle("h2c-3"))
        XCTAssertEqual(answer.status, "200")
        XCTAssertEqual(answer.body, #"{"name":"h2c-3"}"#)
        let request = try XCTUnwrap(h2?.waitForRequests(1).first)
        XCTAssertEqual(request.path, vehicle("h2c-3"))
        XCTAssertEqual(request.values("authorization").count, 1)
    }

    func testARevokedTokenAndARefusedStreamAreSentAgainOnTheHTTP2Upstream() throws {
        try startOnHTTP2 { _, index in
            switch index {
            case 0: return .answer(status: 401, body: Array(#"{"error":{"code":401}}"#.utf8))
            case 1: return .refuse
            default: return .ok()
            }
        }
        let answer = try h2c("POST", vehicle("h2c-4") + ":updateLocation", body: #"{"c":3}"#)
        XCTAssertEqual(answer.status, "200", answer.body)
        let requests = try XCTUnwrap(h2).waitForRequests(3)
        XCTAssertEqual(requests.map(\.body), Array(repeating: Array(#"{"c":3}"#.utf8), count: 3))
    }
}
