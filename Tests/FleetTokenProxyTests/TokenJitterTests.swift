import XCTest
@testable import FleetTokenProxy

/// The random parts of the lifecycle stay within their bounds for any draw.
final class TokenJitterTests: XCTestCase {
    func testBackoffStepsDoubleFromOneSecondToTheCap() {
        let policy = BackoffPolicy()
        XCTAssertEqual((0...9).map { policy.step(afterFailures: $0) }, [0, 1, 2, 4, 8, 16, 32, 60, 60, 60])
        XCTAssertEqual(policy.step(afterFailures: 10_000), 60, "no overflow for long outages")
        XCTAssertEqual(BackoffPolicy(maximum: 0.5).step(afterFailures: 1), 0.5, "a cap under a second caps the first step")
    }

    func testBackoffDelayIsBetweenHalfTheStepAndTheStep() {
        let policy = BackoffPolicy(initial: 1, maximum: 60)
        for failures in 1...12 {
            let step = policy.step(afterFailures: failures)
            XCTAssertEqual(policy.delay(afterFailures: failures, jitter: 0), step)
            for _ in 0..<200 {
                let delay = policy.delay(afterFailures: failures, jitter: Double.random(in: 0..<1))
                XCTAssertGreaterThan(delay, step / 2)
                XCTAssertLessThanOrEqual(delay, step)
            }
            XCTAssertGreaterThan(policy.delay(afterFailures: failures, jitter: 0.999_999), step / 2)
        }
        XCTAssertEqual(policy.delay(afterFailures: 1, jitter: 7), 0.5, "out-of-range draws are clamped")
        XCTAssertEqual(policy.delay(afterFailures: 1, jitter: -1), 1)
    }

    func testRefreshPointIsWithinTheFirstHalfOfTheRefreshWindowForAnyDraw() {
        let timing = TokenTiming()
        for lifetime in [60.0, 300, 600, 3600] {
            let window = timing.window(lifetime: lifetime)
            let start = lifetime - window.refreshMargin
            let middle = start + (window.refreshMargin - window.floor) / 2
            XCTAssertEqual(timing.refreshPoint(expiresAt: lifetime, window: window, jitter: 0), start)
            for _ in 0..<200 {
                let point = timing.refreshPoint(expiresAt: lifetime, window: window, jitter: Double.random(in: 0..<1))
                XCTAssertGreaterThanOrEqual(point, start, "lifetime \(lifetime)")
                XCTAssertLessThan(point, middle, "lifetime \(lifetime)")
                XCTAssertLessThan(point, lifetime - window.floor)
            }
        }
    }

    func testNoSpreadPutsEveryRefreshAtTheStartOfTheWindow() {
        let timing = TokenTiming(refreshSpread: 0)
        let window = timing.window(lifetime: 3600)
        XCTAssertEqual(timing.refreshPoint(expiresAt: 3600, window: window, jitter: 0.9), 3300)
    }
}
