import XCTest
@testable import FleetTokenProxy

/// The start-up rule for the nghttp2 the sidecar runs with: silent when the library, probed,
/// stops every attack the sidecar relies on it to stop, whatever its version says; otherwise one
/// warning line naming the version and each protection that did not hold.
final class H2LibraryVersionTests: XCTestCase {
    func testALibraryThatStopsEveryAttackIsSilentWhateverItsVersion() {
        XCTAssertNil(H2LibraryVersion(number: 0x01_34_00, text: "1.52.0", protections: .fixed).warning)
        XCTAssertNil(H2LibraryVersion(number: 0x01_44_01, text: "1.68.1", protections: .fixed).warning)
    }

    func testEachProtectionThatDoesNotHoldIsNamedInOneLine() throws {
        var unfixed = H2LibraryProbe.Outcome.fixed
        unfixed.stopsReadingWhenTerminated = false
        let warning = try XCTUnwrap(H2LibraryVersion(number: 0x01_44_00, text: "1.68.0", protections: unfixed).warning)
        XCTAssertTrue(warning.contains("libnghttp2 1.68.0"), warning)
        XCTAssertTrue(warning.contains("CVE-2026-27135"), warning)
        XCTAssertFalse(warning.contains("CVE-2023-44487") || warning.contains("CVE-2024-28182"), warning)
        XCTAssertFalse(warning.contains("\n"), "one line")

        let none = H2LibraryProbe.Outcome(stopsRapidReset: false, stopsContinuationFlood: false, stopsReadingWhenTerminated: false)
        let all = try XCTUnwrap(H2LibraryVersion(number: 0x01_34_00, text: "1.52.0", protections: none).warning)
        for cve in ["CVE-2023-44487", "CVE-2024-28182", "CVE-2026-27135"] {
            XCTAssertTrue(all.contains(cve), all)
        }
    }

    /// This machine runs Debian 12's patched 1.52.0 (the package's `Depends:`): probed, it holds.
    func testTheLoadedLibraryIsTheOneProbedAndStopsEveryAttack() throws {
        let running = H2LibraryVersion.running()
        let parts = running.text.split(separator: ".").compactMap { UInt32($0) }
        XCTAssertEqual(parts.count, 3, running.text)
        XCTAssertEqual(running.number, parts[0] << 16 | parts[1] << 8 | parts[2])
        XCTAssertEqual(running.protections, .fixed, running.warning ?? "")
        XCTAssertNil(running.warning)
    }
}
