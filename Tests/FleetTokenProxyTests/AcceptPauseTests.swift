@testable import FleetTokenProxy
import XCTest

/// The two reasons a listener stops accepting — the connection limit and a pause after a
/// failed accept — never undo each other, and the pause grows, then starts over.
final class AcceptPauseTests: XCTestCase {
    func testAFailedAcceptStopsAcceptingForAPauseThatDoublesUpToASecond() {
        var pause = AcceptPause()
        var lengths: [Double] = []
        for _ in 0..<9 {
            let (effect, seconds) = pause.acceptFailed()
            XCTAssertEqual(effect, .stopAccepting)
            lengths.append(try! XCTUnwrap(seconds))
            XCTAssertEqual(pause.pauseEnded(), .startAccepting)
        }
        XCTAssertEqual(lengths, [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1, 1])
    }

    func testASuccessfulAcceptStartsThePauseOverFromTenMilliseconds() {
        var pause = AcceptPause()
        _ = pause.acceptFailed()
        _ = pause.pauseEnded()
        _ = pause.acceptFailed()
        _ = pause.pauseEnded()
        XCTAssertEqual(pause.nextPause, 0.04)
        pause.accepted()
        XCTAssertEqual(pause.acceptFailed().pause, AcceptPause.firstPause)
    }

    func testAFailureDuringAPauseStartsNoSecondPause() {
        var pause = AcceptPause()
        _ = pause.acceptFailed()
        let again = pause.acceptFailed()
        XCTAssertEqual(again.effect, .none)
        XCTAssertNil(again.pause, "one timer at a time")
        XCTAssertEqual(pause.nextPause, 0.02, "counted once")
    }

    func testAClosedConnectionEndsThePauseEarly() {
        var pause = AcceptPause()
        _ = pause.acceptFailed()
        XCTAssertEqual(pause.descriptorFreed(), .startAccepting)
        XCTAssertEqual(pause.pauseEnded(), .none, "the timer's late firing changes nothing")
        XCTAssertEqual(pause.descriptorFreed(), .none, "nothing to end")
        XCTAssertFalse(pause.isPaused)
    }

    func testTheEndOfAPauseDoesNotResumeAListenerHeldAtTheConnectionLimit() {
        var pause = AcceptPause()
        XCTAssertEqual(pause.limitReached(), .stopAccepting)
        XCTAssertEqual(pause.acceptFailed().effect, .none, "already off")
        XCTAssertEqual(pause.pauseEnded(), .none, "the limit still holds")
        XCTAssertEqual(pause.descriptorFreed(), .none)
        XCTAssertTrue(pause.isPaused)
        XCTAssertEqual(pause.limitCleared(), .startAccepting)
        XCTAssertFalse(pause.isPaused)
    }

    func testLeavingTheConnectionLimitDoesNotResumeAListenerPausingAfterAFailure() {
        var pause = AcceptPause()
        XCTAssertEqual(pause.acceptFailed().effect, .stopAccepting)
        XCTAssertEqual(pause.limitReached(), .none, "already off")
        XCTAssertEqual(pause.limitCleared(), .none, "the pause still holds")
        XCTAssertTrue(pause.isPaused)
        XCTAssertEqual(pause.pauseEnded(), .startAccepting)
    }

    func testTheLimitClearedTwiceOrNeverReachedChangesNothing() {
        var pause = AcceptPause()
        XCTAssertEqual(pause.limitCleared(), .none)
        XCTAssertEqual(pause.limitReached(), .stopAccepting)
        XCTAssertEqual(pause.limitReached(), .none)
        XCTAssertEqual(pause.limitCleared(), .startAccepting)
        XCTAssertEqual(pause.limitCleared(), .none)
    }
}
