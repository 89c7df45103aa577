import XCTest
@testable import FleetTokenProxy

final class UpstreamProtocolTests: XCTestCase {
    func testTheThreeValuesAndOnlyThem() throws {
        XCTAssertEqual(try UpstreamProtocol.parse("auto"), .auto)
        XCTAssertEqual(try UpstreamProtocol.parse("h2"), .h2)
        XCTAssertEqual(try UpstreamProtocol.parse("http1.1"), .http11)
        for bad in ["", "H2", "http/1.1", "h2c"] {
            XCTAssertThrowsError(try UpstreamProtocol.parse(bad), bad)
        }
    }
}
