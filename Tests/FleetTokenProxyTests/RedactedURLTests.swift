@testable import FleetTokenProxy
import XCTest

final class RedactedURLTests: XCTestCase {
    func testQueryValuesAreHiddenAndNamesKept() {
        XCTAssertEqual(RedactedURL.text("https://h:8443/t/{id}?key=s3cr3t&token=abc"), "https://h:8443/t/{id}?key=…&token=…")
    }

    func testPlaceholderValuesStayVisible() {
        XCTAssertEqual(RedactedURL.text("http://h/t?type={type}&id={id}&p={provider}&mixed=x{id}"),
                       "http://h/t?type={type}&id={id}&p={provider}&mixed=…")
    }

    func testBareQueryItemsAndFragmentsAreHiddenWhole() {
        XCTAssertEqual(RedactedURL.text("http://h/t?s3cr3t&&a=1#frag"), "http://h/t?…&&a=…#…")
    }

    func testUserInformationIsHidden() {
        XCTAssertEqual(RedactedURL.text("https://user:pw@h/t/{id}"), "https://…@h/t/{id}")
        XCTAssertEqual(RedactedURL.text("user:pw@h/t"), "…@h/t")
        XCTAssertEqual(RedactedURL.text("https://h/t/a@b"), "https://h/t/a@b", "an @ in the path is not user information")
    }

    func testURLWithoutQueryIsUnchanged() {
        XCTAssertEqual(RedactedURL.text("https://auth.internal/fleet/token/{type}/{id}"), "https://auth.internal/fleet/token/{type}/{id}")
    }
}
