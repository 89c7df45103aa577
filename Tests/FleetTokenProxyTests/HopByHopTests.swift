import XCTest
@testable import FleetTokenProxy

/// The end-to-end field writer: what a `Connection` list may and may not remove.
final class HopByHopTests: XCTestCase {
    private func written(_ fields: [(String, String)], request: Bool = true) -> String {
        var out: [UInt8] = []
        let headers = HeadFields(HTTPHeaders(fields.map { (name: $0.0, value: $0.1) }))
        HopByHop.appendEndToEndFields(of: headers, dropping: request ? HopByHop.dropFromRequest : HopByHop.dropFromResponse, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    func testConnectionListedFieldsAreDropped() {
        XCTAssertEqual(written([("Connection", "x-a, X-B"), ("X-A", "1"), ("x-b", "2"), ("X-C", "3")]), "X-C: 3\r\n")
    }

    /// The parser tells the writer whether a Connection field can name others; it must not skip one that does.
    func testParsedHeadsDropTheFieldsTheirConnectionListNames() {
        func written(_ head: String) -> String {
            let bytes = Array(head.utf8)
            guard case .complete(let parsed, _) = bytes.withUnsafeBytes({
                HTTP1Parser.parseResponse($0, maxHeadBytes: 4096, maxHeaderCount: 16)
            }) else {
                XCTFail("not parsed: \(head)")
                return ""
            }
            var out: [UInt8] = []
            HopByHop.appendEndToEndFields(of: parsed.fields, dropping: HopByHop.dropFromResponse, to: &out)
            return String(decoding: out, as: UTF8.self)
        }
        XCTAssertEqual(written("HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nX-A: 1\r\n\r\n"), "X-A: 1\r\n")
        XCTAssertEqual(written("HTTP/1.1 200 OK\r\nConnection: x-a\r\nX-A: 1\r\nX-B: 2\r\n\r\n"), "X-B: 2\r\n")
        XCTAssertEqual(written("HTTP/1.1 200 OK\r\nConnection: close\r\nConnection: x-b\r\nX-A: 1\r\nX-B: 2\r\n\r\n"), "X-A: 1\r\n")
        XCTAssertEqual(written("HTTP/1.1 200 OK\r\nConnection: Keep-Alive, x-a\r\nX-A: 1\r\nX-B: 2\r\n\r\n"), "X-B: 2\r\n")
    }

    func testConnectionCannotNameProtectedFieldsAway() {
        let fields = HeadFields(HTTPHeaders([(name: "Connection", value: "content-length, Transfer-Encoding, host, Authorization, trailer, x-a")]))
        let tokens = HopByHop.connectionTokens(fields).map { String(decoding: fields.storage[$0], as: UTF8.self) }
        XCTAssertEqual(tokens, ["x-a"])
    }

    func testRequestFramingHostAndAuthorizationAreNeverCopied() {
        let out = written([("Host", "evil"), ("Authorization", "Bearer evil"), ("Content-Length", "5"), ("Content-Length", "5"),
                           ("Transfer-Encoding", "chunked"), ("Trailer", "Authorization"), ("X-Kept", "1")])
        XCTAssertEqual(out, "X-Kept: 1\r\n")
    }

    func testResponseFramingIsNeverCopied() {
        let out = written([("Content-Length", "5"), ("Transfer-Encoding", "chunked"), ("Connection", "content-length"), ("X-Kept", "1")], request: false)
        XCTAssertEqual(out, "X-Kept: 1\r\n")
    }

    private func bytes<R>(_ text: String, _ body: (ByteView) -> R) -> R {
        text.withByteView(body)
    }

    func testH2RequestFieldsTheSidecarSetsOrThatAreConnectionSpecificAreDropped() {
        for name in ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host",
                     "authorization", "proxy-authorization"] {
            XCTAssertTrue(bytes(name, HopByHop.dropFromH2Request), name)
        }
        for name in ["te", "content-type", "grpc-timeout", "authorizatio", "authorization2", "x-host", ""] {
            XCTAssertFalse(bytes(name, HopByHop.dropFromH2Request), name)
        }
    }

    func testH2ResponseFieldsThatAreConnectionSpecificAreDropped() {
        for name in ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"] {
            XCTAssertTrue(bytes(name, HopByHop.dropFromH2Response), name)
        }
        for name in ["content-type", "grpc-status", "host", "content-length", "upgrades"] {
            XCTAssertFalse(bytes(name, HopByHop.dropFromH2Response), name)
        }
    }
}
