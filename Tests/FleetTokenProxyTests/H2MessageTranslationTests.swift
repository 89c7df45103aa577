import XCTest
@testable import FleetTokenProxy

/// The translation between an HTTP/1.1 client's REST call and the HTTP/2 upstream.
final class H2MessageTranslationTests: XCTestCase {
    private func list(_ fields: [([UInt8], [UInt8])]) -> H2HeaderList { H2HeaderList(fields.map { (name: $0.0, value: $0.1) }) }
    private func list(_ fields: [(String, String)]) -> H2HeaderList { H2HeaderList(testFields: fields) }

    private func parse(_ bytes: [UInt8]) -> (ResponseHead, consumed: Int)? {
        let parsed = bytes.withUnsafeBytes { HTTP1Parser.parseResponse($0, maxHeadBytes: .max, maxHeaderCount: .max) }
        guard case .complete(let head, let consumed) = parsed else { return nil }
        return (head, consumed)
    }

    func testTheHeadKeepsStatusAndEndToEndFieldsAndTheSidecarFramesIt() throws {
        let bytes = try XCTUnwrap(H2MessageTranslation.http1Head(list([
            (":status", "201"), ("content-type", "application/json"), ("content-length", "12"), ("x-a", "1"),
            ("connection", "close"), ("transfer-encoding", "chunked"), ("trailer", "x-t"),
        ])))
        XCTAssertEqual(String(decoding: bytes, as: UTF8.self),
                       "HTTP/1.1 201 Created\r\ncontent-type: application/json\r\nx-a: 1\r\nContent-Length: 12\r\n\r\n")
        let (head, consumed) = try XCTUnwrap(parse(bytes))
        XCTAssertEqual(head.status, 201)
        XCTAssertEqual(consumed, bytes.count)
        XCTAssertEqual(head.declaredFraming, .contentLength(12))
    }

    func testNoContentLengthMeansChunked() throws {
        let bytes = try XCTUnwrap(H2MessageTranslation.http1Head(list([(":status", "200"), ("content-length", "x1")])))
        XCTAssertEqual(try XCTUnwrap(parse(bytes)).0.declaredFraming, .chunked)
    }

    func testAHeadWithTwoStatusesIsNoHead() {
        // RFC 9113 §8.3.2: exactly one :status. Found by the h2-response-head fuzz target: an
        // invalid first and a valid second :status made a head with the second.
        XCTAssertNil(H2MessageTranslation.http1Head(list([(":status", "001"), (":status", "201")])))
        XCTAssertNil(H2MessageTranslation.http1Head(list([(":status", "200"), (":status", "200")])))
    }

    func testNoValidStatusIsNoHead() {
        for status in ["", "20", "2000", "099", "2x0"] {
            XCTAssertNil(H2MessageTranslation.http1Head(list([(":status", status)])), status)
        }
        XCTAssertNil(H2MessageTranslation.http1Head(list([("content-type", "a")])))
    }

    func testFieldsInvalidForHTTP11AreDropped() throws {
        var fields: [([UInt8], [UInt8])] = [(Array(":status".utf8), Array("200".utf8))]
        fields.append((Array("x-cr".utf8), Array("a\rb".utf8)))
        fields.append((Array("x-lf".utf8), Array("a\nSet-Cookie: x".utf8)))
        fields.append((Array("x-nul".utf8), [0x61, 0x00]))
        fields.append((Array("x-ctl".utf8), [0x61, 0x01]))
        fields.append((Array("x-del".utf8), [0x7F]))
        fields.append((Array("x-ws".utf8), Array(" padded".utf8)))
        fields.append((Array("bad name".utf8), Array("v".utf8)))
        fields.append((Array("x:colon".utf8), Array("v".utf8)))
        fields.append(([], Array("v".utf8)))
        fields.append((Array("x-latin1".utf8), [0x61, 0xFF]))
        fields.append((Array("x-ok".utf8), [0x61, 0x09] + Array("é".utf8)))
        let bytes = try XCTUnwrap(H2MessageTranslation.http1Head(list(fields)))
        let (head, _) = try XCTUnwrap(parse(bytes))
        XCTAssertEqual(head.headers.fields.map { $0.name }, ["x-ok", "Transfer-Encoding"])
    }

    /// The invariant over many field lists: the output parses as exactly one HTTP/1.1 head,
    /// all of it, with the same status, and no field of it holds CR, LF or NUL.
    func testAnyFieldListBecomesExactlyOneHeadWithItsStatus() throws {
        var rng = SystemRandomNumberGenerator()
        let alphabet: [UInt8] = [0x00, 0x01, 0x09, 0x0A, 0x0D, 0x20, 0x3A, 0x61, 0x2D, 0x7F, 0x80, 0xFF, 0x30, 0x35]
        func bytes(_ n: Int) -> [UInt8] { (0..<Int.random(in: 0...n, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! } }
        for _ in 0..<2_000 {
            let status = Int.random(in: 100...999, using: &rng)
            var fields: [([UInt8], [UInt8])] = [(Array(":status".utf8), Array(String(status).utf8))]
            for _ in 0..<Int.random(in: 0...6, using: &rng) { fields.append((bytes(6), bytes(8))) }
            if Bool.random(using: &rng) { fields.append((Array("content-length".utf8), bytes(3))) }
            fields.shuffle(using: &rng)
            let out = try XCTUnwrap(H2MessageTranslation.http1Head(list(fields)))
            let (head, consumed) = try XCTUnwrap(parse(out), String(decoding: out, as: UTF8.self))
            XCTAssertEqual(head.status, status)
            XCTAssertEqual(consumed, out.count)
            for field in head.headers.fields {
                XCTAssertFalse(field.value.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 })
            }
        }
    }

    func testRequestFieldsAreLowerCasedWithoutHopByHopOrFraming() throws {
        let text = "PUT /v1/x HTTP/1.1\r\nHost: h\r\nX-Custom: A\r\nConnection: x-hop\r\nX-Hop: 1\r\nContent-Length: 2\r\n"
            + "Authorization: Bearer c\r\nTE: trailers\r\n\r\n"
        let parsed = Array(text.utf8).withUnsafeBytes { HTTP1Parser.parseRequest($0, maxHeadBytes: .max, maxHeaderCount: .max) }
        guard case .complete(let head, _) = parsed else { return XCTFail("\(parsed)") }
        var fields = H2HeaderList()
        H2MessageTranslation.appendRequestFields(of: head.fields, bodyLength: 2, to: &fields)
        XCTAssertEqual((0..<fields.count).map { "\(fields.name(at: $0))=\(fields.value(at: $0))" }, ["x-custom=A", "content-length=2"])
    }
}
