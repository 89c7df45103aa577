import XCTest
@testable import FleetTokenProxy

/// Reading a gRPC status off an answer (docs/CONTRACT.md §5, "What a call is recorded as"): a
/// `grpc-status` value, bounded to gRPC's 17 codes, and gRPC's HTTP-to-gRPC mapping; and
/// `AnswerHead.facts`, which reads the value in its one walk of a block.
final class GRPCStatusTests: XCTestCase {
    private func parse(_ text: String) -> Int {
        Array(text.utf8).withUnsafeBufferPointer { GRPCStatus.parse(ByteView($0)) }
    }

    func testEveryCodeReadsAsItself() {
        for code in 0...16 { XCTAssertEqual(parse(String(code)), code) }
        XCTAssertEqual(parse("05"), 5)
    }

    /// Whatever an upstream sends, the label stays one of 17 values.
    func testAnythingElseIsUnknown() {
        for value in ["", "17", "99", "255", "1000", "12345678901234567890", "-1", "1 ", " 1", "0x1", "OK", "1.0"] {
            XCTAssertEqual(parse(value), GRPCStatus.unknown, value)
        }
    }

    func testTheHTTPStatusOfAnAnswerWithoutGRPCStatusMapsAsGRPCSays() {
        let expected = [400: 13, 401: 16, 403: 7, 404: 12, 429: 14, 502: 14, 503: 14, 504: 14, 200: 2, 500: 2, 418: 2]
        for (http, grpc) in expected { XCTAssertEqual(GRPCStatus.fromHTTP(http), grpc, "\(http)") }
    }

    func testAnAnswerHeadsFactsCarryItsFirstGRPCStatus() {
        let trailersOnly = AnswerHead.http2(H2HeaderList(testFields: [(":status", "200"), ("content-type", "application/grpc"),
                                                                      ("grpc-status", "5"), ("grpc-status", "0")]))
        XCTAssertEqual(trailersOnly.facts.status, 200)
        XCTAssertEqual(trailersOnly.facts.grpcStatus, 5)
        XCTAssertFalse(trailersOnly.facts.unauthenticated)
        let trailers = AnswerHead.http2(H2HeaderList(testFields: [("grpc-message", "gone"), ("grpc-status", "16")]))
        XCTAssertNil(trailers.facts.status)
        XCTAssertEqual(trailers.facts.grpcStatus, 16)
        XCTAssertTrue(trailers.facts.unauthenticated)
        XCTAssertNil(AnswerHead.http2(H2HeaderList(testFields: [(":status", "200")])).facts.grpcStatus)
        XCTAssertEqual(AnswerHead.http2(H2HeaderList(testFields: [("grpc-status", "300")])).facts.grpcStatus, GRPCStatus.unknown)
    }
}
