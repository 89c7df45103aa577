import XCTest
@testable import FleetTokenProxy

final class WarmConnectionRuleTests: XCTestCase {
    func testAPoolNotWarmedClosesEveryIdleConnectionAndReplacesNothing() {
        let rule = WarmConnectionRule()
        XCTAssertEqual(rule.idleBoundReached(others: 0, replacing: false), .close)
        XCTAssertFalse(rule.replacesLost(age: 100, left: 0))
    }

    func testAWarmPoolReplacesItsLastIdleConnectionFirstAndClosesExtraOnes() {
        var rule = WarmConnectionRule()
        rule.warmed()
        XCTAssertEqual(rule.idleBoundReached(others: 0, replacing: false), .replaceFirst)
        XCTAssertEqual(rule.idleBoundReached(others: 1, replacing: true), .keep, "its replacement is on the way")
        XCTAssertEqual(rule.idleBoundReached(others: 1, replacing: false), .close, "an extra connection")
        XCTAssertEqual(rule.idleBoundReached(others: 3, replacing: false), .close)
    }

    func testAWarmPoolReplacesALostLastConnectionUnlessItDiedYoung() {
        var rule = WarmConnectionRule()
        rule.warmed()
        XCTAssertTrue(rule.replacesLost(age: 75, left: 0))
        XCTAssertTrue(rule.replacesLost(age: WarmConnectionRule.minimumAge, left: 0))
        XCTAssertFalse(rule.replacesLost(age: 0.2, left: 0), "a server closing every new connection is no dialing loop")
        XCTAssertFalse(rule.replacesLost(age: 75, left: 1), "another connection is there")
    }
}
