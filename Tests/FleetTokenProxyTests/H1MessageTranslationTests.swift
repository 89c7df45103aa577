import XCTest
@testable import FleetTokenProxy

/// The translation between an HTTP/2 client's REST call and the HTTP/1.1 upstream.
final class H1MessageTranslationTests: XCTestCase {
    private func head(method: String = "POST", path: String = "/v1/providers/p/vehicles/v", _ fields: [(String, String)],
                      framing: H1MessageTranslation.RequestFraming) -> String {
        let bytes = HeadWriter.bytes {
            H1MessageTranslation.writeRequestHead(method: method, path: path, fields: H2HeaderList(testFields: fields), host: "fleet.example:8443",
                                                  token: "tok", framing: framing, to: &$0)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private func refusal(method: String = "GET", path: String = "/v1/x", _ fields: [([UInt8], [UInt8])]) -> ProxyFailure? {
        H1MessageTranslation.refusal(method: method, path: path, fields: H2HeaderList(fields.map { (name: $0.0, value: $0.1) }))
    }

    func testTheRequestHeadHasTheUpstreamsHostEndToEndFieldsTheSidecarsFramingAndOneToken() {
        let text = head([("content-type", "application/json"), ("content-length", "12"), ("te", "trailers"), ("x-a", "1"),
                         ("host", "client.example"), ("expect", "100-continue"), ("x-b", "2")], framing: .contentLength(12))
        XCTAssertEqual(text, "POST /v1/providers/p/vehicles/v HTTP/1.1\r\nHost: fleet.example:8443\r\ncontent-type: application/json\r\n"
                       + "x-a: 1\r\nx-b: 2\r\nContent-Length: 12\r\nAuthorization: Bearer tok\r\n\r\n")
    }

    func testChunkedAndBodilessFraming() {
        XCTAssertEqual(head(method: "GET", [], framing: .none),
                       "GET /v1/providers/p/vehicles/v HTTP/1.1\r\nHost: fleet.example:8443\r\nAuthorization: Bearer tok\r\n\r\n")
        XCTAssertTrue(head([], framing: .chunked).contains("\r\nTransfer-Encoding: chunked\r\nAuthorization: Bearer tok\r\n\r\n"))
    }

    func testCookieFieldsAreJoinedIntoOne() {
        // RFC 9113 §8.2.3: split cookie fields are concatenated with "; " for HTTP/1.1.
        let text = head([("cookie", "a=1"), ("x-a", "1"), ("cookie", "b=2")], framing: .none)
        XCTAssertTrue(text.hasSuffix("\r\nx-a: 1\r\ncookie: a=1; b=2\r\nAuthorization: Bearer tok\r\n\r\n"), text)
        // Empty crumbs carry nothing: joined last they left "a=1; " for the upstream to trim.
        let withEmpty = head([("cookie", "a=1"), ("cookie", ""), ("x-a", "1")], framing: .none)
        XCTAssertTrue(withEmpty.hasSuffix("\r\nx-a: 1\r\ncookie: a=1\r\nAuthorization: Bearer tok\r\n\r\n"), withEmpty)
        XCTAssertFalse(head([("cookie", "")], framing: .none).contains("cookie"))
    }

    func testTheWrittenHeadParsesAsExactlyOneRequest() throws {
        let text = head([("content-length", "3"), ("x-a", "1\t2")], framing: .contentLength(3)) + "abc"
        let bytes = Array(text.utf8)
        let parsed = bytes.withUnsafeBytes { HTTP1Parser.parseRequest($0, maxHeadBytes: .max, maxHeaderCount: .max) }
        guard case .complete(let request, let length) = parsed else { return XCTFail("\(parsed)") }
        XCTAssertEqual(request.framing, .contentLength(3))
        XCTAssertEqual(length + 3, bytes.count)
        XCTAssertEqual(request.headers.fields.filter { $0.name == "Authorization" }.count, 1)
    }

    func testFieldsThatCouldSmuggleAreRefused() {
        let name = Array("x-a".utf8)
        for bad: [UInt8] in [Array("a\r\nHost: x".utf8), Array("a\nb".utf8), Array("a\rb".utf8), [0x61, 0x00], [0x01], [0x7F], [0x61, 0xFF]] {
            XCTAssertEqual(refusal([(name, bad)])?.httpStatus, 400, "\(bad)")
        }
        // RFC 9113 §8.2.1: malformed in HTTP/2; an HTTP/1.1 parser would trim it, so the value
        // relayed would not be the value given (the h2-request-head fuzz target's first find).
        for padded in [" a", "a ", "\ta", "a\t", "gzip, chunked "] {
            XCTAssertEqual(refusal([(name, Array(padded.utf8))])?.httpStatus, 400, padded)
        }
        // RFC 9113 §8.2.1: upper case in a name is malformed (a "cooKie" was written as a line of
        // its own beside the joined cookies: the fuzz target's second find).
        for badName in ["", "a b", "a:b", "a\r\nb", "x(y)", "cooKie", "X-A"] {
            XCTAssertEqual(refusal([(Array(badName.utf8), Array("v".utf8))])?.httpStatus, 400, badName)
        }
        XCTAssertNotNil(refusal([(Array("transfer-encoding".utf8), Array("chunked".utf8))]), "TE in an HTTP/2 request")
        XCTAssertNotNil(refusal([(Array("content-length".utf8), Array("3".utf8)), (Array("content-length".utf8), Array("4".utf8))]))
        XCTAssertNotNil(refusal([(Array("content-length".utf8), Array("3, 3".utf8))]))
        XCTAssertNotNil(refusal([(Array("content-length".utf8), Array("-1".utf8))]))
        XCTAssertNil(refusal([(Array("content-length".utf8), Array("3".utf8)), (Array("content-length".utf8), Array("3".utf8))]))
        XCTAssertNil(refusal([(name, Array("v\tw é".utf8))]))
    }

    func testMethodAndPathMustBeOneRequestLine() {
        XCTAssertNil(refusal(method: "PATCH", path: "/v1/x?a=b%20c", []))
        for method in ["", "GET /x HTTP/1.1\r\n", "G T", "GET\n"] {
            XCTAssertNotNil(refusal(method: method, path: "/v1/x", []), method)
        }
        for path in ["", "*", "v1/x", "/v1/x y", "/v1/x\r\nHost: a", "/v1/é", "http://a/v1/x"] {
            XCTAssertNotNil(refusal(path: path, []), path)
        }
    }

    func testDeclaredLengthAndFraming() {
        XCTAssertEqual(H1MessageTranslation.declaredLength(H2HeaderList(testFields: [("x", "1"), ("content-length", "42")])), 42)
        XCTAssertNil(H1MessageTranslation.declaredLength(H2HeaderList(testFields: [("x", "1")])))
        XCTAssertEqual(try H1MessageTranslation.framing(wholeBody: 0, declaredLength: nil).get(), .none)
        XCTAssertEqual(try H1MessageTranslation.framing(wholeBody: 0, declaredLength: 0).get(), .contentLength(0))
        XCTAssertEqual(try H1MessageTranslation.framing(wholeBody: 5, declaredLength: nil).get(), .contentLength(5))
        XCTAssertEqual(try H1MessageTranslation.framing(wholeBody: 5, declaredLength: 5).get(), .contentLength(5))
        XCTAssertEqual(try H1MessageTranslation.framing(wholeBody: nil, declaredLength: 70_000).get(), .contentLength(70_000))
        XCTAssertEqual(try H1MessageTranslation.framing(wholeBody: nil, declaredLength: nil).get(), .chunked)
        XCTAssertThrowsError(try H1MessageTranslation.framing(wholeBody: 4, declaredLength: 5).get())
    }

    func testTheAnswerHeadBecomesStatusAndLowerCasedEndToEndFields() throws {
        let text = "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\n"
            + "Keep-Alive: timeout=5\r\nContent-Length: 7\r\nTE: gzip\r\nUpgrade: h2c\r\nX-Custom: A\r\n\r\n"
        let parsed = Array(text.utf8).withUnsafeBytes { HTTP1Parser.parseResponse($0, maxHeadBytes: .max, maxHeaderCount: .max) }
        guard case .complete(let response, _) = parsed else { return XCTFail("\(parsed)") }
        let fields = H1MessageTranslation.responseFields(response, framing: response.framing(requestMethod: "POST"))
        XCTAssertEqual((0..<fields.count).map { "\(fields.name(at: $0))=\(fields.value(at: $0))" },
                       [":status=201", "content-type=application/json", "x-custom=A", "content-length=7"])
        let chunked = H1MessageTranslation.responseFields(response, framing: .chunked)
        XCTAssertNil(chunked.first("content-length"))
        XCTAssertNil(chunked.first("transfer-encoding"))
    }

    /// The invariant over many field lists: a list is refused, or the head written from it
    /// parses as exactly one HTTP/1.1 request, all of it, with one Authorization and the
    /// sidecar's framing.
    func testAnyFieldListIsRefusedOrBecomesExactlyOneRequest() throws {
        var rng = SystemRandomNumberGenerator()
        let alphabet: [UInt8] = [0x00, 0x09, 0x0A, 0x0D, 0x20, 0x3A, 0x61, 0x2D, 0x7F, 0x80, 0x30, 0x2C]
        let names = ["content-length", "transfer-encoding", "host", "authorization", "cookie", "connection", "x-a"]
        func bytes(_ n: Int) -> [UInt8] { (0..<Int.random(in: 0...n, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! } }
        var accepted = 0
        for _ in 0..<2_000 {
            var fields: [([UInt8], [UInt8])] = []
            for _ in 0..<Int.random(in: 0...5, using: &rng) {
                let name = Bool.random(using: &rng) ? Array(names.randomElement(using: &rng)!.utf8) : bytes(4)
                fields.append((name, Bool.random(using: &rng) ? Array("12".utf8) : bytes(6)))
            }
            let list = H2HeaderList(fields.map { (name: $0.0, value: $0.1) })
            guard H1MessageTranslation.refusal(method: "POST", path: "/v1/x", fields: list) == nil else { continue }
            accepted += 1
            let framing = try H1MessageTranslation.framing(wholeBody: nil, declaredLength: H1MessageTranslation.declaredLength(list)).get()
            let out = HeadWriter.bytes {
                H1MessageTranslation.writeRequestHead(method: "POST", path: "/v1/x", fields: list, host: "h", token: "t", framing: framing, to: &$0)
            }
            let parsed = out.withUnsafeBytes { HTTP1Parser.parseRequest($0, maxHeadBytes: .max, maxHeaderCount: .max) }
            guard case .complete(let request, let length) = parsed else { return XCTFail("\(parsed): \(String(decoding: out, as: UTF8.self))") }
            XCTAssertEqual(length, out.count)
            XCTAssertEqual(request.framing, framing == .chunked ? .chunked : .contentLength(H1MessageTranslation.declaredLength(list) ?? 0))
            XCTAssertEqual(request.headers.fields.filter { $0.name.lowercased() == "authorization" }.map(\.value), ["Bearer t"])
            XCTAssertEqual(request.headers.fields.filter { $0.name.lowercased() == "host" }.map(\.value), ["h"])
        }
        XCTAssertGreaterThan(accepted, 100)
    }
}
