import XCTest
@testable import FleetTokenProxy

final class EntityIDTests: XCTestCase {
    func testOrdinaryIdsAreValid() {
        for id in ["v1", "vehicle-42", "a b", "trip_2024.01~x", "*", "ÄÖÜ", "車両", "🚚", "a+b=c&d", "."] {
            XCTAssertTrue(EntityID.isValid(id), id)
        }
    }

    func testEmptyIdIsInvalid() {
        XCTAssertFalse(EntityID.isValid(""))
        XCTAssertEqual(EntityID.problem(with: ""), .empty)
    }

    func testIdOf64CharactersIsValid() {
        XCTAssertTrue(EntityID.isValid(String(repeating: "x", count: 64)))
    }

    func testIdOf65CharactersIsInvalid() {
        XCTAssertFalse(EntityID.isValid(String(repeating: "x", count: 65)))
        XCTAssertEqual(EntityID.problem(with: String(repeating: "x", count: 65)), .tooLong)
    }

    func testLengthCountsCharactersNotUTF8Bytes() {
        // "€" is three UTF-8 bytes: 64 of them are 192 bytes and still a valid id.
        XCTAssertTrue(EntityID.isValid(String(repeating: "€", count: 64)))
        XCTAssertFalse(EntityID.isValid(String(repeating: "€", count: 65)))
        XCTAssertTrue(EntityID.isValid(String(repeating: "🚚", count: 64)))
        XCTAssertFalse(EntityID.isValid(String(repeating: "🚚", count: 65)))
    }

    func testLengthCountsUnicodeScalarsNotGraphemeClusters() {
        // 33 Characters, but 66 scalars (e + combining acute accent): too long.
        let decomposed = String(repeating: "e\u{301}", count: 33)
        XCTAssertEqual(decomposed.count, 33)
        XCTAssertFalse(EntityID.isValid(decomposed))
        XCTAssertTrue(EntityID.isValid(String(repeating: "e\u{301}", count: 32)))
    }

    func testEachForbiddenCharacterIsInvalid() {
        for character in ["/", ":", "\\", "?", "#"] {
            XCTAssertFalse(EntityID.isValid("a\(character)b"), character)
            XCTAssertFalse(EntityID.isValid(character), character)
            XCTAssertEqual(EntityID.problem(with: "a\(character)b"), .forbiddenCharacter(Unicode.Scalar(character)!))
        }
    }

    func testC0ControlCharactersAndDeleteAreInvalid() {
        for scalar in [0x00, 0x01, 0x09, 0x0A, 0x0D, 0x1B, 0x1F, 0x7F] {
            let id = "a" + String(Unicode.Scalar(UInt8(scalar))) + "b"
            XCTAssertFalse(EntityID.isValid(id), "U+\(String(scalar, radix: 16))")
            XCTAssertEqual(EntityID.problem(with: id), .controlCharacter)
        }
    }

    func testC1ControlCharactersAreInvalid() {
        for value: UInt32 in [0x80, 0x85, 0x9F] {
            let id = "a" + String(Unicode.Scalar(value)!) + "b"
            XCTAssertFalse(EntityID.isValid(id), "U+\(String(value, radix: 16))")
        }
    }

    func testCharactersNextToTheControlRangesAreValid() {
        // U+00A0 (no-break space) is encoded C2 A0, right after the C1 range C2 80–C2 9F.
        for value: UInt32 in [0x20, 0x7E, 0xA0, 0xC2, 0x100, 0x2028] {
            let id = "a" + String(Unicode.Scalar(value)!) + "b"
            XCTAssertTrue(EntityID.isValid(id), "U+\(String(value, radix: 16))")
        }
    }
}
