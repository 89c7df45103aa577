@testable import FleetTokenProxy
import XCTest

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

final class HTTP1ParserTests: XCTestCase {
    // MARK: - A typical request

    func testTypicalCurlRequestGivesMethodTargetVersionAndHeadersInOrder() throws {
        let raw = "GET /v1/providers/p/vehicles/v-1?view=FULL HTTP/1.1\r\nHost: 127.0.0.1:4180\r\n"
            + "User-Agent: curl/8.5.0\r\nAccept: */*\r\n\r\n"
        let (head, length) = try completeRequest(raw)
        XCTAssertEqual(head.method, "GET")
        XCTAssertEqual(head.target, "/v1/providers/p/vehicles/v-1?view=FULL")
        XCTAssertEqual(head.minorVersion, 1)
        XCTAssertEqual(head.headers.fields.map(\.name), ["Host", "User-Agent", "Accept"])
        XCTAssertEqual(head.headers.fields.map(\.value), ["127.0.0.1:4180", "curl/8.5.0", "*/*"])
        XCTAssertEqual(head.framing, .none)
        XCTAssertTrue(head.keepAlive)
        XCTAssertFalse(head.expectsContinue)
        XCTAssertEqual(length, raw.utf8.count)
    }

    func testHeadLengthStopsAtTheEndOfTheHeadLeavingBodyAndPipelinedBytes() throws {
        let head = "POST /v1/providers/p/trips?tripId=t HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n"
        let (parsed, length) = try completeRequest(head + "{}GET / HTTP/1.1\r\n")
        XCTAssertEqual(length, head.utf8.count)
        XCTAssertEqual(parsed.framing, .contentLength(2))
    }

    func testLeadingEmptyLinesBeforeTheRequestLineAreSkippedAndCounted() throws {
        let raw = "\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n"
        let (head, length) = try completeRequest(raw)
        XCTAssertEqual(head.method, "GET")
        XCTAssertEqual(length, raw.utf8.count)
    }

    func testHeaderValuesLoseSurroundingSpacesAndTabsButKeepInnerOnes() throws {
        let (head, _) = try completeRequest("GET / HTTP/1.1\r\nHost: h\r\nX-A: \t a \t b \t\r\nX-Empty:\r\nX-Blank: \t \r\n\r\n")
        XCTAssertEqual(head.headers["x-a"], "a \t b")
        XCTAssertEqual(head.headers["X-Empty"], "")
        XCTAssertEqual(head.headers["X-Blank"], "")
    }

    func testObsTextBytesAreAllowedInHeaderValues() throws {
        let raw: [UInt8] = Array("GET / HTTP/1.1\r\nHost: h\r\nX-Name: caf".utf8) + [0xC3, 0xA9] + Array("\r\n\r\n".utf8)
        let (head, _) = try completeRequest(raw)
        XCTAssertEqual(head.headers["X-Name"], "café")
    }

    func testObsTextThatIsNotUTF8IsRefusedRatherThanRewritten() {
        let raw: [UInt8] = Array("GET / HTTP/1.1\r\nHost: h\r\nX-Name: caf".utf8) + [0xE9] + Array("\r\n\r\n".utf8)
        guard case .invalid(let failure) = parse(raw) else { return XCTFail("a Latin-1 byte must not become U+FFFD") }
        XCTAssertEqual(failure.httpStatus, 400)
    }

    func testResponseObsTextThatIsNotUTF8IsRefusedInValuesAndReason() {
        let value: [UInt8] = Array("HTTP/1.1 200 OK\r\nX-Name: caf".utf8) + [0xE9] + Array("\r\nContent-Length: 0\r\n\r\n".utf8)
        guard case .invalid = parseResponse(value) else { return XCTFail("value rewritten") }
        let reason: [UInt8] = Array("HTTP/1.1 200 caf".utf8) + [0xE9] + Array("\r\nContent-Length: 0\r\n\r\n".utf8)
        guard case .invalid = parseResponse(reason) else { return XCTFail("reason rewritten") }
    }

    func testUTF8ObsTextInAResponseIsKeptByteForByte() throws {
        let raw: [UInt8] = Array("HTTP/1.1 200 OK\r\nX-Name: caf".utf8) + [0xC3, 0xA9] + Array("\r\nContent-Length: 0\r\n\r\n".utf8)
        let (head, _) = try completeResponse(raw)
        XCTAssertEqual(Array(head.headers["x-name"]!.utf8), Array("caf".utf8) + [0xC3, 0xA9])
    }

    // MARK: - Keep-alive and Expect

    func testHTTP11KeepsAliveUnlessConnectionClose() throws {
        XCTAssertTrue(try keepAlive("HTTP/1.1", connection: nil))
        XCTAssertFalse(try keepAlive("HTTP/1.1", connection: "close"))
        XCTAssertTrue(try keepAlive("HTTP/1.1", connection: "keep-alive"))
    }

    func testHTTP10KeepsAliveOnlyWithKeepAliveToken() throws {
        XCTAssertFalse(try keepAlive("HTTP/1.0", connection: nil))
        XCTAssertTrue(try keepAlive("HTTP/1.0", connection: "keep-alive"))
        XCTAssertTrue(try keepAlive("HTTP/1.0", connection: "foo ,  Keep-Alive"))
        XCTAssertFalse(try keepAlive("HTTP/1.0", connection: "keep-alive-ish"))
    }

    func testConnectionTokensAreCaseInsensitiveListElementsAndCloseWins() throws {
        XCTAssertFalse(try keepAlive("HTTP/1.1", connection: "Upgrade, CLOSE"))
        XCTAssertFalse(try keepAlive("HTTP/1.0", connection: "keep-alive, close"))
        XCTAssertTrue(try keepAlive("HTTP/1.1", connection: "closed"))
        let (head, _) = try completeRequest("GET / HTTP/1.1\r\nHost: h\r\nConnection: te\r\nConnection: Close\r\n\r\n")
        XCTAssertFalse(head.keepAlive)
    }

    func testExpect100ContinueIsReportedCaseInsensitivelyForHTTP11() throws {
        let (head, _) = try completeRequest("PUT /x HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nExpect: 100-Continue\r\n\r\n")
        XCTAssertTrue(head.expectsContinue)
        let (other, _) = try completeRequest("PUT /x HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nExpect: something\r\n\r\n")
        XCTAssertFalse(other.expectsContinue)
    }

    func testExpect100ContinueIsIgnoredForHTTP10() throws {
        let (head, _) = try completeRequest("PUT /x HTTP/1.0\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n")
        XCTAssertFalse(head.expectsContinue)
    }

    // MARK: - Request framing

    func testChunkedTransferEncodingIsRecognisedCaseInsensitively() throws {
        let (head, _) = try completeRequest("POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\n")
        XCTAssertEqual(head.framing, .chunked)
    }

    func testRepeatedEqualContentLengthsAreAccepted() throws {
        let (head, _) = try completeRequest("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\ncontent-length: 005\r\n\r\n")
        XCTAssertEqual(head.framing, .contentLength(5))
    }

    func testContentLengthUpTo2To53IsAcceptedAndAboveIsRejected() throws {
        let (head, _) = try completeRequest("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 9007199254740992\r\n\r\n")
        XCTAssertEqual(head.framing, .contentLength(1 << 53))
        assertMalformed("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 9007199254740993\r\n\r\n", mentioning: "Content-Length")
        assertMalformed("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999\r\n\r\n", mentioning: "Content-Length")
    }

    // MARK: - Strictness, one rule per test

    func testBareLFEndingTheRequestLineIsRejected() {
        assertMalformed("GET / HTTP/1.1\nHost: h\r\n\r\n", mentioning: "bare LF")
    }

    func testBareLFEndingAHeaderLineIsRejected() {
        assertMalformed("GET / HTTP/1.1\r\nHost: h\nX: y\r\n\r\n", mentioning: "bare LF")
        assertMalformed("GET / HTTP/1.1\r\nHost: h\r\n\n", mentioning: "bare LF")
    }

    func testBareCRIsRejected() {
        assertMalformed("GET / HTTP/1.1\r\nHost: h\rX: y\r\n\r\n", mentioning: "bare CR")
    }

    func testObsFoldIsRejected() {
        assertMalformed("GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n", mentioning: "folding")
        assertMalformed("GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n\tb\r\n\r\n", mentioning: "folding")
    }

    func testWhitespaceBetweenRequestLineAndFirstHeaderIsRejected() {
        assertMalformed("GET / HTTP/1.1\r\n Host: h\r\n\r\n", mentioning: "folding")
    }

    func testWhitespaceBeforeColonIsRejected() {
        assertMalformed("GET / HTTP/1.1\r\nHost : h\r\n\r\n", mentioning: "before colon")
        assertMalformed("GET / HTTP/1.1\r\nHost\t: h\r\n\r\n", mentioning: "before colon")
    }

    func testHeaderLineWithoutNameOrColonIsRejected() {
        assertMalformed("GET / HTTP/1.1\r\nHost: h\r\n: v\r\n\r\n", mentioning: "empty header name")
        assertMalformed("GET / HTTP/1.1\r\nHost: h\r\nNoColon\r\n\r\n", mentioning: "without colon")
    }

    func testHeaderNamesAcceptExactlyTheTokenBytes() {
        let tokenBytes = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
        // A colon would just end the name early ("X" with value "Y: v"), so it proves nothing here.
        for byte in UInt8.min...UInt8.max where byte != UInt8(ascii: ":") {
            let raw = Array("GET / HTTP/1.1\r\nHost: h\r\nX".utf8) + [byte] + Array("Y: v\r\n\r\n".utf8)
            let accepted = if case .complete = parse(raw) { true } else { false }
            XCTAssertEqual(accepted, tokenBytes.contains(byte), "byte \(byte) in a header name")
        }
    }

    func testControlBytesInHeaderValuesAreRejectedButTabIsNot() throws {
        for byte: UInt8 in [0x00, 0x01, 0x0B, 0x1F, 0x7F] {
            let raw = Array("GET / HTTP/1.1\r\nHost: h\r\nX: a".utf8) + [byte] + Array("b\r\n\r\n".utf8)
            assertMalformed(raw, mentioning: "control byte")
        }
        let (head, _) = try completeRequest("GET / HTTP/1.1\r\nHost: h\r\nX: a\tb\r\n\r\n")
        XCTAssertEqual(head.headers["X"], "a\tb")
    }

    func testTransferEncodingTogetherWithContentLengthIsRejected() {
        assertMalformed("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n",
                        mentioning: "both Transfer-Encoding and Content-Length")
    }

    func testTransferEncodingOtherThanChunkedIsRejected() {
        assertMalformed("POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", mentioning: "Transfer-Encoding")
    }

    func testTransferEncodingWithAnotherCodingBeforeChunkedIsRejected() {
        assertMalformed("POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", mentioning: "Transfer-Encoding")
    }

    func testTransferEncodingSplitOverTwoLinesIsRejected() {
        assertMalformed("POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
                        mentioning: "Transfer-Encoding")
    }

    func testTransferEncodingInAnHTTP10RequestIsRejected() {
        assertMalformed("POST /x HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", mentioning: "HTTP/1.0")
    }

    func testContentLengthThatIsNotPlainDigitsIsRejected() {
        for bad in ["+5", "-1", "0x10", "5 5", "1,1", "", "5a"] {
            assertMalformed("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: \(bad)\r\n\r\n", mentioning: "Content-Length")
        }
    }

    func testConflictingContentLengthsAreRejected() {
        assertMalformed("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", mentioning: "conflicting")
    }

    func testVersionsOtherThanHTTP10And11AreRejected() {
        for version in ["HTTP/2.0", "HTTP/1.2", "HTTP/0.9", "http/1.1", "HTTP/1.10", "HTTP/1"] {
            let raw = "GET / \(version)\r\nHost: h\r\n\r\n"
            guard case .invalid(.malformedRequest) = parse(Array(raw.utf8)) else {
                return XCTFail("\(version) was not rejected")
            }
        }
    }

    func testTargetsNotInOriginFormAreRejected() {
        assertMalformed("GET http://fleetengine.googleapis.com/v1 HTTP/1.1\r\nHost: h\r\n\r\n", mentioning: "origin form")
        assertMalformed("CONNECT fleetengine.googleapis.com:443 HTTP/1.1\r\nHost: h\r\n\r\n", mentioning: "origin form")
        assertMalformed("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", mentioning: "origin form")
    }

    func testTargetWithControlOrNonASCIIByteIsRejected() {
        for byte: UInt8 in [0x00, 0x09, 0x7F, 0x80, 0xC3] {
            let raw = Array("GET /a".utf8) + [byte] + Array("b HTTP/1.1\r\nHost: h\r\n\r\n".utf8)
            assertMalformed(raw, mentioning: "request target")
        }
    }

    func testRequestLineNeedsSingleSpaces() {
        assertMalformed("GET  / HTTP/1.1\r\nHost: h\r\n\r\n", mentioning: "more than one space")
        assertMalformed("GET /  HTTP/1.1\r\nHost: h\r\n\r\n", mentioning: "HTTP version")
        assertMalformed("GET / HTTP/1.1 \r\nHost: h\r\n\r\n", mentioning: "after HTTP version")
    }

    func testMethodMustBeAToken() {
        assertMalformed("GE(T / HTTP/1.1\r\nHost: h\r\n\r\n", mentioning: "method")
        assertMalformed(" GET / HTTP/1.1\r\nHost: h\r\n\r\n", mentioning: "method")
    }

    func testHTTP11RequestWithoutHostIsRejected() throws {
        assertMalformed("GET / HTTP/1.1\r\n\r\n", mentioning: "Host")
        let (head, _) = try completeRequest("GET / HTTP/1.0\r\n\r\n")
        XCTAssertFalse(head.keepAlive)
    }

    func testMoreThanOneHostIsRejected() {
        assertMalformed("GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", mentioning: "Host")
    }

    func testMoreHeadersThanTheLimitIsRequestTooLarge() throws {
        let three = "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\n"
        _ = try completeRequest(three + "\r\n", maxHeaderCount: 3)
        guard case .invalid(.requestTooLarge) = parse(Array((three + "C: 3\r\n\r\n").utf8), maxHeaderCount: 3) else {
            return XCTFail("a fourth header was accepted with a limit of three")
        }
    }

    func testHeadOverTheByteLimitIsRequestTooLarge() throws {
        let raw = "GET / HTTP/1.1\r\nHost: h\r\nX: \(String(repeating: "v", count: 100))\r\n\r\n"
        let size = raw.utf8.count
        _ = try completeRequest(raw, maxHeadBytes: size)
        guard case .invalid(.requestTooLarge) = parse(Array(raw.utf8), maxHeadBytes: size - 1) else {
            return XCTFail("a head one byte over the limit was not refused")
        }
        // Not all of it has arrived, but what has already fills the limit.
        guard case .invalid(.requestTooLarge) = parse(Array(raw.utf8.prefix(60)), maxHeadBytes: 60) else {
            return XCTFail("a partial head that fills the limit was not refused")
        }
    }

    func testEveryProperPrefixOfAValidHeadIsIncomplete() throws {
        let raw = Array("\r\nPOST /x?y=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 12\r\nX: a b\r\n\r\n".utf8)
        _ = try completeRequest(raw)
        for end in 0..<raw.count {
            guard case .incomplete = parse(Array(raw[..<end])) else {
                return XCTFail("prefix of \(end) bytes was not incomplete")
            }
        }
    }

    func testInvalidBytesAreRejectedBeforeTheHeadEnds() {
        guard case .invalid(.malformedRequest) = parse(Array("GET / HTTP/1.1\nHost: h".utf8)) else {
            return XCTFail("a bare LF was not refused until the head ended")
        }
    }

    func testFailureMessagesDoNotEchoTheInput() {
        let secret = String(repeating: "SECRET", count: 20)
        let inputs = [
            "GET /\(secret)\u{7F} HTTP/1.1\r\n\r\n",
            "GET /\(secret) HTTP/9.9\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: h\r\nX-\(secret) : v\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: h\r\nX: \(secret)\u{01}\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: \(secret)\r\n\r\n",
        ]
        for input in inputs {
            guard case .invalid(let failure) = parse(Array(input.utf8)) else { return XCTFail("accepted: \(input)") }
            XCTAssertFalse(failure.message.contains("SECRET"), failure.message)
            XCTAssertLessThanOrEqual(failure.message.utf8.count, 80, failure.message)
        }
    }

    // MARK: - Responses

    func testResponseWithContentLengthGivesStatusReasonHeadersAndLength() throws {
        let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n"
        let (response, length) = try completeResponse(head + "{}")
        XCTAssertEqual(response.minorVersion, 1)
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.reason, "OK")
        XCTAssertEqual(response.headers["content-type"], "application/json")
        XCTAssertEqual(response.framing(requestMethod: "GET"), .contentLength(2))
        XCTAssertTrue(response.keepAlive)
        XCTAssertEqual(length, head.utf8.count)
    }

    func testResponseReasonMayBeEmptyWithOrWithoutTheSpace() throws {
        let (withSpace, _) = try completeResponse("HTTP/1.1 404 \r\nContent-Length: 0\r\n\r\n")
        XCTAssertEqual(withSpace.status, 404)
        XCTAssertEqual(withSpace.reason, "")
        let (withoutSpace, _) = try completeResponse("HTTP/1.1 404\r\nContent-Length: 0\r\n\r\n")
        XCTAssertEqual(withoutSpace.status, 404)
        XCTAssertEqual(withoutSpace.reason, "")
        let (spaced, _) = try completeResponse("HTTP/1.1 503 Service  Unavailable\r\nContent-Length: 0\r\n\r\n")
        XCTAssertEqual(spaced.reason, "Service  Unavailable")
    }

    func testResponsesTo204And304And1xxAndHEADHaveNoBody() throws {
        for status in [100, 103, 204, 304] {
            let (response, _) = try completeResponse("HTTP/1.1 \(status) X\r\nContent-Length: 10\r\n\r\n")
            XCTAssertEqual(response.framing(requestMethod: "GET"), BodyFraming.none, "status \(status)")
        }
        let (response, _) = try completeResponse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n")
        XCTAssertEqual(response.framing(requestMethod: "HEAD"), BodyFraming.none)
        XCTAssertEqual(response.framing(requestMethod: "GET"), .contentLength(10))
    }

    func testResponseWithoutLengthIsReadUntilCloseAndNotKeptAlive() throws {
        let (response, _) = try completeResponse("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n")
        XCTAssertEqual(response.framing(requestMethod: "GET"), .untilClose)
        XCTAssertFalse(response.keepAlive)
        let (noContent, _) = try completeResponse("HTTP/1.1 204 No Content\r\n\r\n")
        XCTAssertTrue(noContent.keepAlive)
    }

    func testResponseWhoseLastCodingIsChunkedIsChunked() throws {
        let (response, _) = try completeResponse("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: CHUNKED\r\n\r\n")
        XCTAssertEqual(response.framing(requestMethod: "POST"), .chunked)
        XCTAssertTrue(response.keepAlive)
    }

    func testResponseWhoseLastCodingIsNotChunkedIsReadUntilClose() throws {
        let (response, _) = try completeResponse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n")
        XCTAssertEqual(response.framing(requestMethod: "GET"), .untilClose)
        XCTAssertFalse(response.keepAlive)
    }

    func testResponseTransferEncodingWinsOverContentLengthButEndsKeepAlive() throws {
        let (response, _) = try completeResponse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\n")
        XCTAssertEqual(response.framing(requestMethod: "GET"), .chunked)
        XCTAssertFalse(response.keepAlive)
    }

    func testHTTP10ResponseKeepsAliveOnlyWithKeepAliveToken() throws {
        let (plain, _) = try completeResponse("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n")
        XCTAssertEqual(plain.minorVersion, 0)
        XCTAssertFalse(plain.keepAlive)
        let (kept, _) = try completeResponse("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n")
        XCTAssertTrue(kept.keepAlive)
        let (closed, _) = try completeResponse("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
        XCTAssertFalse(closed.keepAlive)
    }

    func testResponseStatusMustBeThreeDigitsFrom100() {
        for line in ["HTTP/1.1 20 OK", "HTTP/1.1 2000 OK", "HTTP/1.1 abc OK", "HTTP/1.1 099 Low", "HTTP/1.1  200 OK"] {
            guard case .invalid(.malformedRequest) = parseResponse(Array("\(line)\r\n\r\n".utf8)) else {
                return XCTFail("accepted status line \(line)")
            }
        }
    }

    func testResponseVersionOtherThanHTTP1xIsRejected() {
        guard case .invalid(.malformedRequest) = parseResponse(Array("HTTP/2 200 OK\r\n\r\n".utf8)) else {
            return XCTFail("HTTP/2 status line accepted")
        }
    }

    func testResponseWithBareLFOrObsFoldIsRejected() {
        for raw in ["HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n", "HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n"] {
            guard case .invalid(.malformedRequest) = parseResponse(Array(raw.utf8)) else {
                return XCTFail("accepted \(raw.debugDescription)")
            }
        }
    }

    func testEveryProperPrefixOfAValidResponseHeadIsIncomplete() throws {
        let raw = Array("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".utf8)
        _ = try completeResponse(raw)
        for end in 0..<raw.count {
            guard case .incomplete = parseResponse(Array(raw[..<end])) else {
                return XCTFail("prefix of \(end) bytes was not incomplete")
            }
        }
    }

    // MARK: - Micro-benchmark (FTP_MICROBENCH=1 only; prints, never asserts on time)

    func testMicrobenchmarkParseOfTypicalEightHeaderRequest() throws {
        try XCTSkipUnless(getenv("FTP_MICROBENCH").map { String(cString: $0) } == "1", "set FTP_MICROBENCH=1 to run")
        let raw = Array((
            "POST /v1/providers/my-project/vehicles/vehicle-0042:updateLocation HTTP/1.1\r\n"
            + "Host: 127.0.0.1:4180\r\n"
            + "User-Agent: fleet-dispatch/2.3.1 grpc-java-netty/1.62.2\r\n"
            + "Accept: application/json\r\n"
            + "Accept-Encoding: gzip, deflate\r\n"
            + "Content-Type: application/json; charset=utf-8\r\n"
            + "Content-Length: 187\r\n"
            + "X-Goog-Request-Params: name=providers/my-project/vehicles/vehicle-0042\r\n"
            + "Connection: keep-alive\r\n"
            + "\r\n"
        ).utf8)
        let iterations = 200_000
        var checksum = 0
        let elapsed = raw.withUnsafeBytes { bytes in
            for _ in 0..<10_000 { checksum &+= headLength(HTTP1Parser.parseRequest(bytes, maxHeadBytes: 8192, maxHeaderCount: 100)) }
            let clock = ContinuousClock()
            return clock.measure {
                for _ in 0..<iterations {
                    checksum &+= headLength(HTTP1Parser.parseRequest(bytes, maxHeadBytes: 8192, maxHeaderCount: 100))
                }
            }
        }
        XCTAssertEqual(checksum, raw.count * (iterations + 10_000))
        let nanoseconds = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
        print("HTTP1Parser.parseRequest, \(raw.count)-byte head, 8 headers: \(Int(nanoseconds / Double(iterations))) ns per parse")
    }

    // MARK: - Helpers

    private func parse(_ raw: [UInt8], maxHeadBytes: Int = 8192, maxHeaderCount: Int = 64) -> HeadParseResult<RequestHead> {
        raw.withUnsafeBytes { HTTP1Parser.parseRequest($0, maxHeadBytes: maxHeadBytes, maxHeaderCount: maxHeaderCount) }
    }

    private func parseResponse(_ raw: [UInt8]) -> HeadParseResult<ResponseHead> {
        raw.withUnsafeBytes { HTTP1Parser.parseResponse($0, maxHeadBytes: 8192, maxHeaderCount: 64) }
    }

    private func completeRequest(
        _ raw: String, maxHeadBytes: Int = 8192, maxHeaderCount: Int = 64, file: StaticString = #filePath, line: UInt = #line
    ) throws -> (RequestHead, Int) {
        try completeRequest(Array(raw.utf8), maxHeadBytes: maxHeadBytes, maxHeaderCount: maxHeaderCount, file: file, line: line)
    }

    private func completeRequest(
        _ raw: [UInt8], maxHeadBytes: Int = 8192, maxHeaderCount: Int = 64, file: StaticString = #filePath, line: UInt = #line
    ) throws -> (RequestHead, Int) {
        switch parse(raw, maxHeadBytes: maxHeadBytes, maxHeaderCount: maxHeaderCount) {
        case .complete(let head, let length): return (head, length)
        case .incomplete: throw Unexpected("incomplete")
        case .invalid(let failure): throw Unexpected("invalid: \(failure)")
        }
    }

    private func completeResponse(_ raw: String) throws -> (ResponseHead, Int) {
        try completeResponse(Array(raw.utf8))
    }

    private func completeResponse(_ raw: [UInt8]) throws -> (ResponseHead, Int) {
        switch parseResponse(raw) {
        case .complete(let head, let length): return (head, length)
        case .incomplete: throw Unexpected("incomplete")
        case .invalid(let failure): throw Unexpected("invalid: \(failure)")
        }
    }

    private func keepAlive(_ version: String, connection: String?) throws -> Bool {
        let field = connection.map { "Connection: \($0)\r\n" } ?? ""
        return try completeRequest("GET / \(version)\r\nHost: h\r\n\(field)\r\n").0.keepAlive
    }

    private func assertMalformed(_ raw: String, mentioning fragment: String, file: StaticString = #filePath, line: UInt = #line) {
        assertMalformed(Array(raw.utf8), mentioning: fragment, file: file, line: line)
    }

    private func assertMalformed(_ raw: [UInt8], mentioning fragment: String, file: StaticString = #filePath, line: UInt = #line) {
        switch parse(raw) {
        case .invalid(.malformedRequest(let message)):
            XCTAssertTrue(message.contains(fragment), "message \"\(message)\" does not mention \"\(fragment)\"", file: file, line: line)
        case .invalid(let other):
            XCTFail("refused as \(other), not as malformed", file: file, line: line)
        case .incomplete:
            XCTFail("not refused: incomplete", file: file, line: line)
        case .complete:
            XCTFail("not refused: accepted", file: file, line: line)
        }
    }
}

private func headLength(_ result: HeadParseResult<RequestHead>) -> Int {
    if case .complete(_, let length) = result { return length }
    return 0
}

private struct Unexpected: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
