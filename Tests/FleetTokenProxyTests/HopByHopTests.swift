import XCTest
@testable import FleetTokenProxy

/// The end-to-end field writer: what a `Connection` list may and may not remove.
final class HopByHopTests: XCTestCase {
    private func written(_ fields: [(String, String)], request: Bool = true) -> String {
        var out: [UInt8] = []
        let headers = HTTPHeaders(fields.map { (name: $0.0, value: $0.1) })
        HopByHop.appendEndToEndFields(of: headers, dropping: request ? HopByHop.dropFromRequest : HopByHop.dropFromResponse, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    func testConnectionListedFieldsAreDropped() {
        XCTAssertEqual(written([("Connection", "x-a, X-B"), ("X-A", "1"), ("x-b", "2"), ("X-C", "3")]), "X-C: 3\r\n")
    }

    func testConnectionCannotNameProtectedFieldsAway() {
        let tokens = HopByHop.connectionTokens(HTTPHeaders([(name: "Connection", value: "content-length, Transfer-Encoding, host, Authorization, trailer, x-a")]))
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
}
