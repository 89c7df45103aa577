import Foundation
import XCTest
@testable import FleetTokenProxy

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

final class ExpiryValueTests: XCTestCase {
    let now = 1_800_000_000.0

    private func expiry(_ value: Any) -> Double? {
        ExpiryValue.absoluteExpiry(from: value, wallNow: now)
    }

    /// The value as the provider answer's parser hands it over.
    private func fromJSON(_ json: String) throws -> Any {
        guard case .object(let object)? = JSONish.parse(Array(#"{"v":\#(json)}"#.utf8)), let value = object["v"] else {
            struct NotJSON: Error {}
            throw NotJSON()
        }
        return value
    }

    func testEpochSecondsAreAbsolute() throws {
        XCTAssertEqual(expiry(1_800_003_600), 1_800_003_600)
        XCTAssertEqual(expiry(try fromJSON("1800003600")), 1_800_003_600)
        XCTAssertEqual(expiry(try fromJSON("1800003600.5")), 1_800_003_600.5)
    }

    func testEpochMillisecondsAreConvertedToSeconds() throws {
        XCTAssertEqual(expiry(1_800_003_600_250), 1_800_003_600.25)
        XCTAssertEqual(expiry(try fromJSON("1800003600000")), 1_800_003_600)
    }

    func testSmallNumbersAreSecondsFromNow() throws {
        XCTAssertEqual(expiry(3600), now + 3600)
        XCTAssertEqual(expiry(90.5), now + 90.5)
        XCTAssertEqual(expiry(try fromJSON("3600")), now + 3600)
        XCTAssertEqual(expiry(0), now)
    }

    func testSizeThresholdsSeparateTheThreeReadings() {
        XCTAssertEqual(expiry(999_999_999), now + 999_999_999)
        XCTAssertEqual(expiry(1_000_000_000), 1_000_000_000)
        XCTAssertEqual(expiry(999_999_999_999), 999_999_999_999)
        XCTAssertEqual(expiry(1_000_000_000_000), 1_000_000_000)
    }

    func testStringsOfDigitsAreReadBySize() {
        XCTAssertEqual(expiry("3600"), now + 3600)
        XCTAssertEqual(expiry("1800003600"), 1_800_003_600)
        XCTAssertEqual(expiry("1800003600000"), 1_800_003_600)
        XCTAssertEqual(expiry("1800003600.5"), 1_800_003_600.5)
    }

    func testRFC3339InUTCIsAbsolute() {
        XCTAssertEqual(expiry("2026-11-22T10:00:00Z"), 1_795_341_600)
        XCTAssertEqual(expiry("2026-11-22t10:00:00z"), 1_795_341_600)
        XCTAssertEqual(expiry("2026-11-22 10:00:00Z"), 1_795_341_600)
    }

    func testRFC3339FractionalSeconds() throws {
        let value = try XCTUnwrap(expiry("2026-11-22T10:00:00.250Z"))
        XCTAssertEqual(value, 1_795_341_600.25, accuracy: 1e-6)
        let nanos = try XCTUnwrap(expiry("2026-11-22T10:00:00.123456789Z"))
        XCTAssertEqual(nanos, 1_795_341_600.123456789, accuracy: 1e-6)
    }

    func testRFC3339OffsetsAreApplied() {
        XCTAssertEqual(expiry("2026-11-22T11:00:00+01:00"), 1_795_341_600)
        XCTAssertEqual(expiry("2026-11-22T04:30:00-05:30"), 1_795_341_600)
        XCTAssertEqual(expiry("2026-11-22T10:00:00-00:00"), 1_795_341_600)
        // An offset that crosses midnight and the year.
        XCTAssertEqual(expiry("2027-01-01T00:30:00+01:00"), 1_798_759_800)
    }

    func testRFC3339LeapDaysAndEpoch() {
        XCTAssertEqual(RFC3339.epochSeconds("1970-01-01T00:00:00Z"), 0)
        XCTAssertEqual(RFC3339.epochSeconds("1969-12-31T23:59:59Z"), -1)
        XCTAssertEqual(RFC3339.epochSeconds("2024-02-29T12:00:00Z"), 1_709_208_000)
        XCTAssertEqual(RFC3339.epochSeconds("2000-03-01T00:00:00Z"), 951_868_800)
        XCTAssertNil(RFC3339.epochSeconds("2100-02-29T00:00:00Z"))
        XCTAssertNil(RFC3339.epochSeconds("2023-02-29T00:00:00Z"))
    }

    func testRFC3339AgreesWithTheCLibraryOverFiveCenturies() {
        // Every 13th day from 1800 to 2400: every month of every year, the century years too.
        var seconds = -5_364_662_400  // 1800-01-01
        while seconds < 13_569_465_600 {  // 2400-01-01
            var t = time_t(seconds + 45_296)  // 12:34:56
            var parts = tm()
            gmtime_r(&t, &parts)
            let text = String(
                format: "%04d-%02d-%02dT%02d:%02d:%02dZ",
                Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
                Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec)
            )
            XCTAssertEqual(RFC3339.epochSeconds(text), Double(seconds + 45_296), text)
            seconds += 13 * 86_400
        }
    }

    func testValuesThatAreNotExpiriesAreRejected() throws {
        let rejected: [Any] = [
            true, false, try fromJSON("true"), "soon", "", " 3600", "3600 ", "-5", "+5", "1e9", "3600.",
            -5, Double.nan, Double.infinity,
            "2026-11-22T10:00:00", "2026-11-22", "2026-11-22T10:00Z", "2026-13-01T00:00:00Z",
            "2026-02-30T00:00:00Z", "2026-11-22T24:00:00Z", "2026-11-22T10:60:00Z",
            "2026-11-22T10:00:00.Z", "2026-11-22T10:00:00+0100", "2026-11-22T10:00:00+01:00x",
            [1, 2], ["exp": 1],
        ]
        for value in rejected {
            XCTAssertNil(expiry(value), "\(value)")
        }
    }

    /// Found by the provider-answer fuzz target (Fuzz/Findings/provider-answer/rfc3339-expiry-before-1970):
    /// an RFC 3339 time before 1970 read as a negative epoch time. Like a negative number, it is
    /// not an expiry.
    func testRFC3339TimesBeforeTheEpochAreNotExpiries() {
        XCTAssertNil(expiry("1013-11-22T11:30:00+01:00"))
        XCTAssertNil(expiry("1969-12-31T23:59:59Z"))
        XCTAssertEqual(expiry("1970-01-01T00:00:00Z"), 0)
    }
}
