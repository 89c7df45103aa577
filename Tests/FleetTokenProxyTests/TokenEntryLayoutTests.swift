import XCTest
@testable import FleetTokenProxy

/// A `TokenEntry` is kept for every cached entity (up to `--max-entities`, 100k by default):
/// its size is part of what each entity costs.
final class TokenEntryLayoutTests: XCTestCase {
    func testAnEntryStaysSmall() {
        // The state (a held token at most: the backoff case is boxed), two times, the failure
        // count and the shared `Policy` reference; the settings are not copied into each entry.
        XCTAssertLessThanOrEqual(MemoryLayout<TokenEntry>.stride, 80)
    }
}
