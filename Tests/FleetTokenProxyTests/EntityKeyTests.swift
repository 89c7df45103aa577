import XCTest
@testable import FleetTokenProxy

final class EntityKeyTests: XCTestCase {
    /// `==` and `hash(into:)` are written out (by entity kind number, not `rawValue`): keys that
    /// differ in one part only, whichever, are different keys, and equal keys hash alike.
    func testKeysDifferingInOnePartAreDifferentAndEqualKeysHashAlike() {
        var keys: [EntityKey] = []
        for type in EntityType.allCases {
            keys.append(EntityKey(provider: "p1", type: type, id: "x"))
            keys.append(EntityKey(provider: "p2", type: type, id: "x"))
            keys.append(EntityKey(provider: "p1", type: type, id: "y"))
        }
        XCTAssertEqual(Set(keys).count, keys.count)
        for (i, a) in keys.enumerated() {
            for (j, b) in keys.enumerated() { XCTAssertEqual(a == b, i == j, "\(a) vs \(b)") }
            let copy = EntityKey(provider: String(a.provider), type: a.type, id: String(a.id))
            XCTAssertEqual(copy, a)
            XCTAssertEqual(copy.hashValue, a.hashValue)
        }
    }
}
