import XCTest
@testable import FleetTokenProxy

final class SlotIndexTests: XCTestCase {
    /// Random inserts and removals against a dictionary, with hashes drawn from a small range
    /// so that runs collide, wrap around the table's end and are shifted back on removal.
    func testAgreesWithADictionaryUnderCollidingInsertsAndRemovals() {
        var generator = SystemRandomNumberGenerator()
        var index = SlotIndex()
        var keys: [Int: UInt32] = [:]  // slot -> hash
        for step in 0..<30_000 {
            let slot = Int.random(in: 0..<300, using: &generator)
            if let hash = keys[slot] {
                index.remove(slot, hash: hash)
                keys[slot] = nil
            } else {
                // Few distinct hashes, some near the top so runs wrap past the last bucket.
                let hash = Bool.random(using: &generator)
                    ? UInt32.random(in: 0..<8, using: &generator)
                    : UInt32.max - UInt32.random(in: 0..<8, using: &generator)
                index.insert(slot, hash: hash)
                keys[slot] = hash
            }
            XCTAssertEqual(index.count, keys.count, "step \(step)")
            if step % 97 == 0 {
                for probe in 0..<300 {
                    let hash = keys[probe] ?? 3
                    let found = index.find(hash: hash, isKey: { $0 == probe })
                    XCTAssertEqual(found, keys[probe] == nil ? nil : probe, "slot \(probe) at step \(step)")
                }
            }
        }
    }

    func testEmptyIndexFindsNothing() {
        let index = SlotIndex()
        XCTAssertNil(index.find(hash: 0, isKey: { _ in true }))
    }

    func testTheKeyCheckTellsApartSlotsWithOneHash() {
        var index = SlotIndex()
        index.insert(4, hash: 7)
        index.insert(9, hash: 7)
        XCTAssertEqual(index.find(hash: 7, isKey: { $0 == 9 }), 9)
        XCTAssertEqual(index.find(hash: 7, isKey: { $0 == 4 }), 4)
        XCTAssertNil(index.find(hash: 7, isKey: { $0 == 5 }))
        index.remove(4, hash: 7)
        XCTAssertEqual(index.find(hash: 7, isKey: { $0 == 9 }), 9)
        XCTAssertNil(index.find(hash: 7, isKey: { $0 == 4 }))
    }
}
