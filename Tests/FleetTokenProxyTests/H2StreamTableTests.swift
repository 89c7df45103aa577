import XCTest
@testable import FleetTokenProxy

final class H2StreamTableTests: XCTestCase {
    private final class Box {
        let id: Int32
        init(_ id: Int32) { self.id = id }
    }

    func testInsertLookUpAndRemove() {
        var table = H2StreamTable<Box>()
        XCTAssertTrue(table.isEmpty)
        XCTAssertNil(table[1])
        XCTAssertNil(table.removeValue(forKey: 1))
        table[1] = Box(1)
        table[3] = Box(3)
        XCTAssertEqual(table.count, 2)
        XCTAssertEqual(table[3]?.id, 3)
        let replaced = Box(33)
        table[3] = replaced
        XCTAssertTrue(table[3] === replaced)
        XCTAssertEqual(table.count, 2)
        XCTAssertEqual(table.removeValue(forKey: 1)?.id, 1)
        XCTAssertNil(table[1])
        table[3] = nil
        XCTAssertTrue(table.isEmpty)
    }

    /// Against a Dictionary, through growth, colliding ids and removals from the middle of
    /// probe runs (which shift later entries back).
    func testMatchesADictionary() {
        var table = H2StreamTable<Box>()
        var model: [Int32: Box] = [:]
        var generator = SplitMix64(seed: 0x5EED)
        // Ids 16, 32, 64 … apart land on few home slots: long probe runs.
        let ids: [Int32] = (0..<300).map { Int32(1 + 2 * $0) } + (0..<100).map { Int32(1 + 512 * $0) }
        for round in 0..<20_000 {
            let id = ids.randomElement(using: &generator)!
            if round % 3 == 0 {
                XCTAssertEqual(table.removeValue(forKey: id)?.id, model.removeValue(forKey: id)?.id)
            } else {
                let box = Box(id)
                table[id] = box
                model[id] = box
            }
            XCTAssertEqual(table.count, model.count)
        }
        for id in ids { XCTAssertTrue(table[id] === model[id], "stream \(id)") }
        XCTAssertEqual(Set(table.values.map(\.id)), Set(model.keys))
        table.removeAll()
        XCTAssertTrue(table.isEmpty)
        XCTAssertTrue(table.values.isEmpty)
        for id in ids { XCTAssertNil(table[id]) }
    }
}
