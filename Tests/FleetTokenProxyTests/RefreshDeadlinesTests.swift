import XCTest
@testable import FleetTokenProxy

final class RefreshDeadlinesTests: XCTestCase {
    /// Random sets, moves and removals against a plain dictionary: the heap always hands out
    /// the earliest deadline, and exactly the due ones.
    func testAgreesWithADictionaryUnderRandomChanges() {
        var generator = SystemRandomNumberGenerator()
        var heap = RefreshDeadlines()
        var reference: [Int: Double] = [:]
        for step in 0..<20_000 {
            let slot = Int.random(in: 0..<200, using: &generator)
            switch Int.random(in: 0..<10, using: &generator) {
            case 0..<6:
                let due = Double(Int.random(in: 0..<1000, using: &generator))
                heap.set(slot, due: due)
                reference[slot] = due
            case 6..<9:
                heap.remove(slot)
                reference[slot] = nil
            default:
                let now = Double(Int.random(in: 0..<1000, using: &generator))
                var popped: [(Int, Double)] = []
                while let due = heap.earliest, let index = heap.popDue(at: now) {
                    popped.append((index, due))
                }
                let expected = reference.filter { $0.value <= now }
                XCTAssertEqual(popped.count, expected.count, "step \(step)")
                XCTAssertEqual(popped.map(\.1), popped.map(\.1).sorted(), "not earliest first at step \(step)")
                for (index, due) in popped {
                    XCTAssertEqual(reference[index], due, "step \(step)")
                    reference[index] = nil
                }
            }
            XCTAssertEqual(heap.count, reference.count, "step \(step)")
            XCTAssertEqual(heap.earliest, reference.values.min(), "step \(step)")
            XCTAssertEqual(heap.deadline(of: slot), reference[slot], "step \(step)")
        }
    }

    func testADeadlineNotYetDueIsNotPopped() {
        var heap = RefreshDeadlines()
        heap.set(3, due: 10)
        XCTAssertNil(heap.popDue(at: 9.999))
        XCTAssertEqual(heap.popDue(at: 10), 3)
        XCTAssertTrue(heap.isEmpty)
    }
}
