@testable import FleetTokenProxy
import Foundation
import XCTest

/// Hostile HTTP/1.1 clients against the real binary, with a raw recording upstream as Fleet
/// Engine: each test checks the client got a clear error or a close, the sidecar still serves,
/// and (reading every byte the upstream received) that nothing was forwarded that should not be.
final class HTTP1AdversarialTests: SidecarTestCase {
    var upstream: RecordingUpstream!

    override func tearDown() {
        super.tearDown()
        upstream?.stop()
    }

    private func start(reply: @escaping @Sendable (RecordingUpstream.Request, Int) -> RecordingUpstream.Reply = { _, _ in .bytes(RecordingUpstream.okJSON) }) throws {
        upstream = try RecordingUpstream(reply: reply)
        sidecar = try SidecarProcess(["--upstream", "http://\(upstream.address)", "--provider-url", standIns.providerTemplate])
    }

    private func client() throws -> RawClient { try RawClient(address: sidecar.address) }

    /// One plain call on a fresh connection: the sidecar still serves.
    private func assertStillServing(file: StaticString = #filePath, line: UInt = #line) throws {
        let c = try client()
        c.send("GET /v1/providers/p/vehicles/still-serving HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(c.readResponse()?.status, 200, "sidecar no longer serves", file: file, line: line)
    }

    /// Sends `request` on a fresh connection and returns the first response (nil: closed).
    private func exchange(_ request: String) throws -> RawClient.Response? {
        let c = try client()
        c.send(request)
        return c.readResponse()
    }

    /// Every request the upstream framed, and no request line anywhere in the bytes other
    /// than those `expected` (by request line prefix).
    private func assertUpstreamSaw(_ expected: [String], file: StaticString = #filePath, line: UInt = #line) {
        let requests = upstream.waitForRequests(expected.count, timeout: 3)
        usleep(200_000)
        let all = upstream.requests
        XCTAssertEqual(all.map(\.requestLine), expected.map { "\($0) HTTP/1.1" }, "upstream saw other requests", file: file, line: line)
        for request in requests {
            XCTAssertEqual(request.values("authorization").count, 1, "not exactly one Authorization: \(request.head)", file: file, line: line)
            XCTAssertEqual(request.values("host").count, 1, "not exactly one Host: \(request.head)", file: file, line: line)
            XCTAssertFalse(request.values("authorization").contains { $0.contains("evil") }, file: file, line: line)
            XCTAssertLessThanOrEqual(request.values("content-length").count + request.values("transfer-encoding").count, 1,
                                     "more than one framing field: \(request.head)", file: file, line: line)
        }
    }

    // MARK: Defect 1: smuggling through Connection

    func testConnectionContentLengthCannotSmuggleARequest() throws {
        try start()
        // The reproduction as reported: 68 body bytes of a declared 71.
        let smuggled = "DELETE /v1/providers/p/trips/T1 HTTP/1.1\r\nContent-Length: 0\r\nX-Pad: "
        let attacker = try client()
        attacker.send("GET /v1/providers/p/vehicles/A HTTP/1.1\r\nHost: x\r\nConnection: content-length\r\nContent-Length: 71\r\n\r\n" + smuggled)
        _ = attacker.readResponse(timeout: 0.5)
        let victim = try exchange("GET /v1/providers/p/vehicles?pageSize=1 HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(victim?.status, 200)
        let requests = upstream.waitForRequests(1, timeout: 3)
        XCTAssertFalse(requests.contains { $0.requestLine.hasPrefix("DELETE") }, "smuggled: \(requests.map(\.requestLine))")
        XCTAssertEqual(requests.filter { $0.requestLine == "GET /v1/providers/p/vehicles?pageSize=1 HTTP/1.1" }.count, 1)
        for request in requests { XCTAssertEqual(request.values("authorization").count, 1, request.head) }

        // The same with the whole declared body: forwarded as one request, its body intact.
        let whole = smuggled + "abc"
        XCTAssertEqual(whole.utf8.count, 71)
        let first = try exchange("GET /v1/providers/p/vehicles/A2 HTTP/1.1\r\nHost: x\r\nConnection: content-length\r\nContent-Length: 71\r\n\r\n" + whole)
        XCTAssertEqual(first?.status, 200)
        let second = try exchange("GET /v1/providers/p/vehicles?pageSize=2 HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(second?.status, 200)
        let all = upstream.waitForRequests(3, timeout: 3)
        XCTAssertFalse(all.contains { $0.requestLine.hasPrefix("DELETE") }, "smuggled: \(all.map(\.requestLine))")
        let forwarded = all.first { $0.requestLine.hasPrefix("GET /v1/providers/p/vehicles/A2 ") }
        XCTAssertEqual(forwarded?.body.count, 71, "the body travels as the first request's body")
        XCTAssertEqual(forwarded?.values("content-length"), ["71"])
        XCTAssertEqual(all.filter { $0.requestLine == "GET /v1/providers/p/vehicles?pageSize=2 HTTP/1.1" }.count, 1)
        for request in all {
            XCTAssertEqual(request.values("authorization").count, 1, request.head)
            XCTAssertEqual(request.values("host").count, 1, request.head)
        }
    }

    func testConnectionCannotRemoveHostAuthorizationOrTransferEncoding() throws {
        try start()
        for name in ["host", "authorization", "Host, Authorization, Content-Length"] {
            let answer = try exchange("GET /v1/providers/p/vehicles/B HTTP/1.1\r\nHost: x\r\nConnection: \(name)\r\nAuthorization: Bearer evil\r\n\r\n")
            XCTAssertEqual(answer?.status, 200, name)
        }
        let chunked = try exchange("POST /v1/providers/p/vehicles?vehicleId=C HTTP/1.1\r\nHost: x\r\nConnection: transfer-encoding\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
        XCTAssertEqual(chunked?.status, 200)
        let next = try exchange("GET /v1/providers/p/vehicles/D HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(next?.status, 200)
        assertUpstreamSaw(Array(repeating: "GET /v1/providers/p/vehicles/B", count: 3)
                          + ["POST /v1/providers/p/vehicles?vehicleId=C", "GET /v1/providers/p/vehicles/D"])
        XCTAssertEqual(upstream.requests[3].body, Array("{}".utf8))
    }

    // MARK: Defect 12: the body in the sidecar's own framing

    func testChunkExtensionsAndTrailersNeverReachUpstream() throws {
        try start()
        let ext = try exchange("POST /v1/providers/p/vehicles?vehicleId=E HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1;ext =v\r\n{\r\n1;a=b\r\n}\r\n0\r\n\r\n")
        XCTAssertTrue(ext?.status == 200 || ext?.status == 400, "\(String(describing: ext))")
        let unterminated = try exchange("POST /v1/providers/p/vehicles?vehicleId=F HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2;ext=\"unterminated\r\n{}\r\n0\r\n\r\n")
        XCTAssertTrue(unterminated == nil || unterminated?.status == 200 || unterminated?.status == 400)
        let trailers = try exchange("POST /v1/providers/p/vehicles?vehicleId=G HTTP/1.1\r\nHost: x\r\nTrailer: Authorization, Host\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nAuthorization: Bearer evil\r\nHost: evil\r\nContent-Length: 99\r\nTransfer-Encoding: evil\r\n\r\n")
        XCTAssertEqual(trailers?.status, 200)
        try assertStillServing()
        let text = upstream.allText
        XCTAssertFalse(text.contains(";ext"), text)
        XCTAssertFalse(text.contains(";a=b"), text)
        XCTAssertFalse(text.contains("evil"), text)
        XCTAssertFalse(text.lowercased().contains("trailer:"), text)
        for request in upstream.requests where request.requestLine.hasPrefix("POST") {
            XCTAssertEqual(request.body, Array("{}".utf8), request.head)
            XCTAssertLessThanOrEqual(request.values("content-length").count + request.values("transfer-encoding").count, 1, request.head)
        }
    }

    func testTwoIdenticalContentLengthsGoOutAsOne() throws {
        try start()
        let answer = try exchange("POST /v1/providers/p/vehicles?vehicleId=H HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}")
        XCTAssertEqual(answer?.status, 200)
        assertUpstreamSaw(["POST /v1/providers/p/vehicles?vehicleId=H"])
        XCTAssertEqual(upstream.requests.first?.values("content-length"), ["2"])
    }

    // MARK: Defect 13: obs-text

    func testObsTextHeaderValueIsRelayedByteForByteOrRefused() throws {
        try start()
        let c = try client()
        c.send(Array("GET /v1/providers/p/vehicles/I HTTP/1.1\r\nHost: x\r\nX-Name: caf".utf8) + [0xE9] + Array("\r\n\r\n".utf8))
        let answer = c.readResponse()
        XCTAssertTrue(answer?.status == 200 || answer?.status == 400, "\(String(describing: answer))")
        try assertStillServing()
        let bytes = Array(upstream.received.joined())
        XCTAssertNil(RecordingUpstream.find([0xEF, 0xBF, 0xBD], in: bytes, from: 0), "U+FFFD reached the upstream")
        if answer?.status == 200 {
            XCTAssertNotNil(RecordingUpstream.find(Array("caf".utf8) + [0xE9, 13, 10], in: bytes, from: 0))
        }
    }

    func testObsTextInAResponseIsNotRewritten() throws {
        try start { _, _ in .bytes(Array("HTTP/1.1 200 OK\r\nX-Name: caf".utf8) + [0xE9] + Array("\r\nContent-Length: 2\r\n\r\n{}".utf8)) }
        let c = try client()
        c.send("GET /v1/providers/p/vehicles/J HTTP/1.1\r\nHost: x\r\n\r\n")
        let answer = c.readResponse()
        XCTAssertNotNil(answer)
        XCTAssertFalse(answer?.head.contains("\u{FFFD}") ?? true, "U+FFFD reached the client")
    }

    // MARK: Defect 10: method overrides

    func testMethodOverrideAndAPIKeyHeadersAreRefused() throws {
        try start()
        for name in ["X-HTTP-Method-Override", "x-http-method", "X-METHOD-OVERRIDE", "X-Goog-Api-Key"] {
            let answer = try exchange("GET /v1/providers/p/vehicles/K HTTP/1.1\r\nHost: x\r\n\(name): DELETE\r\n\r\n")
            XCTAssertEqual(answer?.status, 400, name)
            XCTAssertTrue(answer?.body.contains("INVALID_ARGUMENT") ?? false, "\(String(describing: answer))")
        }
        try assertStillServing()
        assertUpstreamSaw(["GET /v1/providers/p/vehicles/still-serving"])
    }

    // MARK: Defect 9: whole-head deadline

    func testTricklingHeadAndSilentPartialHeadAreClosedByTheHeadDeadline() throws {
        try start()
        let trickler = try client()
        let silent = try client()
        let started = Date()
        silent.send("GE")
        let head = Array("GET /v1/providers/p/vehicles/L HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n".utf8)
        var closedAt: Double?
        for byte in head.prefix(12) {
            trickler.send([byte])
            if trickler.waitForClose(timeout: 1) { closedAt = Date().timeIntervalSince(started); break }
        }
        let trickleClosed = closedAt ?? (trickler.waitForClose(timeout: 1) ? Date().timeIntervalSince(started) : nil)
        XCTAssertNotNil(trickleClosed, "a head trickled for 12 s was not closed")
        if let trickleClosed { XCTAssertLessThan(trickleClosed, 11.5) }
        XCTAssertTrue(silent.waitForClose(timeout: max(0.1, 11.5 - Date().timeIntervalSince(started))), "2 bytes then nothing: not closed by the head deadline")
        XCTAssertTrue(trickler.unread.isEmpty || trickler.unread.hasPrefix("HTTP/1.1 408"), trickler.unread)
        try assertStillServing()
        assertUpstreamSaw(["GET /v1/providers/p/vehicles/still-serving"])
    }

    // MARK: Defect 14 (HTTP/1.1 parts)

    /// The upstream answers the first request, then closes its kept-alive connection when the
    /// next request arrives without answering (the keep-alive race).
    private func startWithKeepAliveRace() throws {
        try start { _, index in index == 1 ? .close : .bytes(RecordingUpstream.okJSON) }
    }

    func testPostIsNotResentAfterTheKeepAliveRace() throws {
        try startWithKeepAliveRace()
        XCTAssertEqual(try exchange("GET /v1/providers/p/vehicles/M HTTP/1.1\r\nHost: x\r\n\r\n")?.status, 200)
        let post = try exchange("POST /v1/providers/p/vehicles?vehicleId=N HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        XCTAssertEqual(post?.status, 502)
        usleep(300_000)
        XCTAssertEqual(upstream.requests.filter { $0.requestLine.hasPrefix("POST") }.count, 1, "the POST was sent twice")
    }

    func testGetIsResentAfterTheKeepAliveRace() throws {
        try startWithKeepAliveRace()
        XCTAssertEqual(try exchange("GET /v1/providers/p/vehicles/O HTTP/1.1\r\nHost: x\r\n\r\n")?.status, 200)
        XCTAssertEqual(try exchange("GET /v1/providers/p/vehicles/P HTTP/1.1\r\nHost: x\r\n\r\n")?.status, 200)
    }

    func testSnakeCaseDuplicateAndClientCredentialsInTheQueryAreRefused() throws {
        try start()
        let calls = [("POST", "/v1/providers/p/vehicles?vehicleId=a&vehicle_id=b"), ("POST", "/v1/providers/p/trips?trip_id=b&tripId=a"),
                     ("GET", "/v1/providers/p/vehicles/Q?access_token=abc"), ("GET", "/v1/providers/p/vehicles/Q?x=1&%6Bey=abc"),
                     ("GET", "/v1/providers/p/vehicles?ACCESS_TOKEN=abc"), ("GET", "/v1/providers/p/vehicles?access%5Ftoken=abc")]
        for (method, target) in calls {
            let answer = try exchange("\(method) \(target) HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
            XCTAssertEqual(answer?.status, 400, target)
            XCTAssertTrue(answer?.body.contains("INVALID_ARGUMENT") ?? false, target)
        }
        try assertStillServing()
        assertUpstreamSaw(["GET /v1/providers/p/vehicles/still-serving"])
    }

    func testResponseWithContentLengthAndTransferEncodingIsRelayedWithOneFraming() throws {
        try start { _, _ in .bytes(Array("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n".utf8)) }
        let c = try client()
        c.send("GET /v1/providers/p/vehicles/R HTTP/1.1\r\nHost: x\r\n\r\n")
        let answer = c.readResponse()
        XCTAssertEqual(answer?.status, 200)
        XCTAssertEqual(answer?.body, "{}")
        let head = answer?.head.lowercased() ?? ""
        XCTAssertFalse(head.contains("content-length") && head.contains("transfer-encoding"), head)
    }

    func testSwitchingProtocolsFromUpstreamIsABadGateway() throws {
        try start { _, index in
            index == 0 ? .bytes(Array("HTTP/1.1 101 Switching Protocols\r\nUpgrade: evil\r\nConnection: upgrade\r\n\r\nGARBAGE".utf8))
                       : .bytes(RecordingUpstream.okJSON)
        }
        let answer = try exchange("GET /v1/providers/p/vehicles/S HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(answer?.status, 502)
        XCTAssertFalse(answer?.body.contains("GARBAGE") ?? false)
        try assertStillServing()
    }

    func testConnectionContentLengthInAResponseKeepsTheLength() throws {
        try start { _, _ in .bytes(Array("HTTP/1.1 200 OK\r\nConnection: content-length\r\nContent-Length: 2\r\n\r\n{}".utf8)) }
        let c = try client()
        c.send("GET /v1/providers/p/vehicles/T HTTP/1.1\r\nHost: x\r\n\r\n")
        let answer = c.readResponse(timeout: 3)
        XCTAssertEqual(answer?.status, 200)
        XCTAssertTrue(answer?.head.lowercased().contains("content-length: 2") ?? false, "\(String(describing: answer))")
    }

    // MARK: Classes around them

    func testAmbiguousRequestFramingIsRefusedAndNothingForwarded() throws {
        try start()
        let heads = [
            "Content-Length: 2\r\nTransfer-Encoding: chunked",
            "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked",
            "Transfer-Encoding: chunked, identity",
            "Content-Length: 2\r\nContent-Length: 3",
        ]
        for fields in heads {
            let answer = try exchange("POST /v1/providers/p/vehicles?vehicleId=U HTTP/1.1\r\nHost: x\r\n\(fields)\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
            XCTAssertEqual(answer?.status, 400, fields)
        }
        for body in ["zz\r\n{}\r\n0\r\n\r\n", "2 \r\n{}\r\n0\r\n\r\n", "-2\r\n{}\r\n0\r\n\r\n", "2\r\n{}XX0\r\n\r\n"] {
            let c = try client()
            c.send("POST /v1/providers/p/vehicles?vehicleId=V HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + body)
            let answer = c.readResponse(timeout: 3)
            XCTAssertTrue(answer == nil || answer?.status == 400, "\(body): \(String(describing: answer))")
        }
        try assertStillServing()
        assertUpstreamSaw(["GET /v1/providers/p/vehicles/still-serving"])
    }

    func testPipelinedRequestsAreAnsweredInOrderEachForwardedWhole() throws {
        try start()
        let c = try client()
        c.send("POST /v1/providers/p/vehicles?vehicleId=W HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
               + "GET /v1/providers/p/vehicles/X HTTP/1.1\r\nHost: x\r\n\r\n"
               + "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(c.readResponse()?.status, 200)
        XCTAssertEqual(c.readResponse()?.status, 200)
        XCTAssertEqual(c.readResponse()?.status, 404)
        assertUpstreamSaw(["POST /v1/providers/p/vehicles?vehicleId=W", "GET /v1/providers/p/vehicles/X"])
        XCTAssertEqual(upstream.requests.first?.body, Array("{}".utf8))
    }

    func testHTTP10KeepAliveCarriesTwoCalls() throws {
        try start()
        let c = try client()
        c.send("GET /v1/providers/p/vehicles/Y HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        let first = c.readResponse()
        XCTAssertEqual(first?.status, 200)
        XCTAssertTrue(first?.head.hasPrefix("HTTP/1.0 200") ?? false)
        c.send("GET /v1/providers/p/vehicles/Z HTTP/1.0\r\n\r\n")
        XCTAssertEqual(c.readResponse()?.status, 200)
        XCTAssertTrue(c.waitForClose(timeout: 3), "HTTP/1.0 without keep-alive: closed after the answer")
        assertUpstreamSaw(["GET /v1/providers/p/vehicles/Y", "GET /v1/providers/p/vehicles/Z"])
    }

    func testExpectContinueIsAnsweredAndNotForwarded() throws {
        try start()
        let c = try client()
        c.send("POST /v1/providers/p/vehicles?vehicleId=E1 HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
        XCTAssertEqual(c.readResponse()?.status, 100)
        c.send("{}")
        XCTAssertEqual(c.readResponse()?.status, 200)
        assertUpstreamSaw(["POST /v1/providers/p/vehicles?vehicleId=E1"])
        XCTAssertEqual(upstream.requests.first?.values("expect"), [])
        XCTAssertEqual(upstream.requests.first?.body, Array("{}".utf8))
    }

    func testOverLongHeadIsRefusedWith413() throws {
        try start()
        let c = try client()
        c.send("GET /v1/providers/p/vehicles/OL HTTP/1.1\r\nHost: x\r\nX-Big: " + String(repeating: "a", count: 40 * 1024) + "\r\n\r\n")
        XCTAssertEqual(c.readResponse()?.status, 413)
        XCTAssertTrue(c.waitForClose(timeout: 3))
        try assertStillServing()
        assertUpstreamSaw(["GET /v1/providers/p/vehicles/still-serving"])
    }

    // MARK: Budgets

    func testBufferBudgetRefusesNewCallsWith503AndIsGivenBackOnClose() throws {
        try start()
        // Each call whose chunked body is still arriving holds `bufferHighWater` of the budget.
        let limits = ServerLimits()
        let fit = limits.maxBufferedBytes / limits.bufferHighWater
        var holders: [RawClient] = []
        for i in 0..<fit {
            let c = try client()
            c.send("POST /v1/providers/p/vehicles?vehicleId=b\(i) HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
            holders.append(c)
        }
        usleep(500_000)
        let refused = try exchange("POST /v1/providers/p/vehicles?vehicleId=over HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        XCTAssertEqual(refused?.status, 503)
        XCTAssertTrue(refused?.body.contains("UNAVAILABLE") ?? false, "\(String(describing: refused))")
        holders.removeLast(4)
        usleep(300_000)
        let served = try exchange("POST /v1/providers/p/vehicles?vehicleId=after HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        XCTAssertEqual(served?.status, 200, "closed connections give their bytes back")
        XCTAssertFalse(upstream.requests.contains { $0.requestLine.contains("vehicleId=over") })
    }
}
