import XCTest
@testable import FleetTokenProxy

/// The start-up rule for the nghttp2 the sidecar runs with: a version with every fix upstream
/// is silent; an older one (Debian 12's 1.52.0, whose backports its version does not show) is one
/// warning line naming the version and the CVE left to the distribution.
final class H2LibraryVersionTests: XCTestCase {
    func testOlderThanTheUpstreamFixesWarnsNamingTheVersionAndTheCVE() throws {
        let debian = H2LibraryVersion(number: 0x01_34_00, text: "1.52.0")
        let warning = try XCTUnwrap(debian.warning)
        XCTAssertTrue(warning.contains("1.52.0"), warning)
        XCTAssertTrue(warning.contains("CVE-2026-27135"), warning)
        XCTAssertFalse(warning.contains("\n"), "one line")
        XCTAssertNotNil(H2LibraryVersion(number: 0x01_44_00, text: "1.68.0").warning)
    }

    func testTheUpstreamReleaseWithTheFixesAndLaterAreSilent() {
        XCTAssertNil(H2LibraryVersion(number: 0x01_44_01, text: "1.68.1").warning)
        XCTAssertNil(H2LibraryVersion(number: 0x01_45_00, text: "1.69.0").warning)
        XCTAssertNil(H2LibraryVersion(number: 0x02_00_00, text: "2.0.0").warning)
    }

    func testRunningIsTheLoadedLibraryWithItsNumberAndText() throws {
        let running = H2LibraryVersion.running()
        let parts = running.text.split(separator: ".").compactMap { UInt32($0) }
        XCTAssertEqual(parts.count, 3, running.text)
        XCTAssertEqual(running.number, parts[0] << 16 | parts[1] << 8 | parts[2])
        XCTAssertGreaterThanOrEqual(running.number, 0x01_34_00, "the oldest library the package accepts is 1.52.0")
    }
}
