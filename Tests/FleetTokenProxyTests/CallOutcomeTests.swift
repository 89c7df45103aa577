import XCTest
@testable import FleetTokenProxy

/// What a call is recorded as (docs/CONTRACT.md §5, "What a call is recorded as"): every row of
/// `CallOutcome`'s table, for REST and for gRPC.
final class CallOutcomeTests: XCTestCase {
    private func outcome(_ events: (inout CallOutcome) -> Void) -> CallOutcome {
        var outcome = CallOutcome()
        events(&outcome)
        return outcome
    }

    func testAWholeRESTAnswerIsItsHTTPStatus() {
        let answered = outcome { $0.headSent(status: 404); $0.answerEnded() }
        XCTAssertEqual(answered.code(grpc: false), .status(404))
        XCTAssertEqual(answered.code(grpc: false).label, "404")
    }

    func testAWholeGRPCAnswerIsTheGRPCStatusItEndedWithNotItsHTTPStatus() {
        let trailers = outcome { $0.headSent(status: 200); $0.grpcStatusSent(5); $0.answerEnded() }
        XCTAssertEqual(trailers.code(grpc: true), .status(5))
        XCTAssertEqual(outcome { $0.headSent(status: 200); $0.grpcStatusSent(0); $0.answerEnded() }.code(grpc: true).label, "0")
    }

    /// gRPC's mapping for an answer with no `grpc-status`: a proxy's error page, or a 200 that
    /// never said how the call ended.
    func testAGRPCAnswerWithoutGRPCStatusIsWhatTheClientsLibraryMakesOfItsHTTPStatus() {
        XCTAssertEqual(outcome { $0.headSent(status: 503); $0.answerEnded() }.code(grpc: true), .status(14))
        XCTAssertEqual(outcome { $0.headSent(status: 404); $0.answerEnded() }.code(grpc: true), .status(12))
        XCTAssertEqual(outcome { $0.headSent(status: 200); $0.answerEnded() }.code(grpc: true), .status(2))
        // A grpc-status wins over the HTTP status.
        XCTAssertEqual(outcome { $0.headSent(status: 503); $0.grpcStatusSent(8); $0.answerEnded() }.code(grpc: true), .status(8))
    }

    func testACallThatEndsBeforeItsAnswerIsCancelledWhateverHadBeenSent() {
        XCTAssertEqual(CallOutcome().code(grpc: true), .cancelled)
        XCTAssertEqual(CallOutcome().code(grpc: false), .cancelled)
        let begun = outcome { $0.headSent(status: 200); $0.grpcStatusSent(0) } // trailers kept, not yet sent
        XCTAssertEqual(begun.code(grpc: true), .cancelled)
        XCTAssertEqual(begun.code(grpc: false).label, "cancelled")
    }

    func testAnAnswerTheSidecarCutIsCutForRESTAndInternalForGRPC() {
        let cut = outcome { $0.headSent(status: 200); $0.answerCut() }
        XCTAssertEqual(cut.code(grpc: false), .cut)
        XCTAssertEqual(cut.code(grpc: false).label, "cut")
        XCTAssertEqual(cut.code(grpc: true), .status(13))
    }

    func testTheFirstEndingDecidesAndNothingAfterItCounts() {
        let whole = outcome { $0.headSent(status: 200); $0.answerEnded(); $0.answerCut(); $0.headSent(status: 502) }
        XCTAssertEqual(whole.code(grpc: false), .status(200))
        let cut = outcome { $0.headSent(status: 200); $0.answerCut(); $0.grpcStatusSent(0); $0.answerEnded() }
        XCTAssertEqual(cut.code(grpc: true), .status(13))
    }
}
