import XCTest
@testable import FleetTokenProxy

/// The one rule for sending a call again (docs/CONTRACT.md §4, §7), every row of its table.
final class ReplayPolicyTests: XCTestCase {
    private func call(idempotent: Bool = false, sends: Int = 1, tokenRetried: Bool = false, intact: Bool = true) -> ReplayPolicy.Call {
        ReplayPolicy.Call(isIdempotent: idempotent, sends: sends, tokenRetried: tokenRetried, requestIntact: intact)
    }

    func testNothingIsSentAgainThatTheSidecarNoLongerHoldsWhole() {
        for why: ReplayPolicy.Why in [.unauthenticated, .unprocessed, .connectionLost, .declined] {
            XCTAssertFalse(ReplayPolicy.mayResend(why, call(idempotent: true, intact: false)), "\(why)")
            XCTAssertTrue(ReplayPolicy.mayResend(why, call(idempotent: true)), "\(why)")
        }
    }

    func testARefusedTokenIsRetriedOnceWhateverTheMethodAndTheSends() {
        XCTAssertTrue(ReplayPolicy.mayResend(.unauthenticated, call(sends: ReplayPolicy.maxSends)))
        XCTAssertFalse(ReplayPolicy.mayResend(.unauthenticated, call(tokenRetried: true)))
    }

    func testAnUnprocessedOrDeclinedExchangeGoesAgainWhateverTheMethodUpToTheSends() {
        for why: ReplayPolicy.Why in [.unprocessed, .declined] {
            XCTAssertTrue(ReplayPolicy.mayResend(why, call(sends: ReplayPolicy.maxSends - 1)), "\(why)")
            XCTAssertFalse(ReplayPolicy.mayResend(why, call(sends: ReplayPolicy.maxSends)), "\(why)")
        }
    }

    func testALostConnectionResendsOnlyAnIdempotentMethod() {
        XCTAssertFalse(ReplayPolicy.mayResend(.connectionLost, call(idempotent: false)))
        XCTAssertTrue(ReplayPolicy.mayResend(.connectionLost, call(idempotent: true)))
        XCTAssertFalse(ReplayPolicy.mayResend(.connectionLost, call(idempotent: true, sends: ReplayPolicy.maxSends)))
    }

    func testIdempotentMethodsAreTheOnesRFC9110Names() {
        for method in ["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"] { XCTAssertTrue(ReplayPolicy.isIdempotent(method), method) }
        for method in ["POST", "PATCH", "get", "CONNECT", ""] { XCTAssertFalse(ReplayPolicy.isIdempotent(method), method) }
    }
}
