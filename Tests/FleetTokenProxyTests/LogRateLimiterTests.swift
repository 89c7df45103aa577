@testable import FleetTokenProxy
import XCTest

/// A storm of one line becomes one line now and one an interval, each with the count held back.
final class LogRateLimiterTests: XCTestCase {
    func testAStormIsOneLineAnIntervalWithTheCountHeldBack() {
        var limiter = LogRateLimiter(interval: 10)
        XCTAssertEqual(limiter.admit("emfile", now: 100), .log(suppressed: 0))
        var held = 0
        for i in 1...999 where limiter.admit("emfile", now: 100 + Double(i) * 0.009) == .suppress { held += 1 }
        XCTAssertEqual(held, 999)
        XCTAssertEqual(limiter.admit("emfile", now: 110), .log(suppressed: 999))
        XCTAssertEqual(limiter.admit("emfile", now: 110.5), .suppress)
        XCTAssertEqual(limiter.admit("emfile", now: 125), .log(suppressed: 1))
        XCTAssertEqual(limiter.admit("emfile", now: 200), .log(suppressed: 0), "a quiet spell: nothing was held back")
    }

    func testEachKeyHasItsOwnAllowance() {
        var limiter = LogRateLimiter(interval: 10)
        XCTAssertEqual(limiter.admit("emfile", now: 0), .log(suppressed: 0))
        XCTAssertEqual(limiter.admit("enfile", now: 1), .log(suppressed: 0))
        XCTAssertEqual(limiter.admit("emfile", now: 2), .suppress)
        XCTAssertEqual(limiter.admit("enfile", now: 3), .suppress)
    }

    func testPastItsKeysItForgetsTheOneLoggedLongestAgo() {
        var limiter = LogRateLimiter(interval: 10, maxKeys: 2)
        _ = limiter.admit("a", now: 0)
        _ = limiter.admit("b", now: 1)
        XCTAssertEqual(limiter.admit("a", now: 2), .suppress)
        XCTAssertEqual(limiter.admit("c", now: 3), .log(suppressed: 0), "a is forgotten")
        XCTAssertEqual(limiter.admit("b", now: 4), .suppress, "b is remembered")
        XCTAssertEqual(limiter.admit("a", now: 5), .log(suppressed: 0), "a is new again, b forgotten")
    }
}
