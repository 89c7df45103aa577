import XCTest
@testable import FleetTokenProxy

final class PercentDecodingTests: XCTestCase {
    func testTextWithoutEscapesIsUnchanged() {
        XCTAssertEqual(PercentDecoding.decode("vehicle-1"), "vehicle-1")
        XCTAssertEqual(PercentDecoding.decode(""), "")
        XCTAssertEqual(PercentDecoding.decode("€uro"), "€uro")
    }

    func testEncodedSpaceIsDecoded() {
        XCTAssertEqual(PercentDecoding.decode("v%20one"), "v one")
    }

    func testMultiByteUTF8IsDecoded() {
        XCTAssertEqual(PercentDecoding.decode("%E2%82%AC"), "€")
        XCTAssertEqual(PercentDecoding.decode("%F0%9F%9A%9A"), "🚚")
    }

    func testHexDigitsMayBeLowerOrUpperCase() {
        XCTAssertEqual(PercentDecoding.decode("%e2%82%ac%2f%2F"), "€//")
    }

    func testEscapesMixWithLiteralNonASCII() {
        XCTAssertEqual(PercentDecoding.decode("€%20€"), "€ €")
    }

    func testTruncatedEscapeIsMalformed() {
        XCTAssertNil(PercentDecoding.decode("%"))
        XCTAssertNil(PercentDecoding.decode("abc%"))
        XCTAssertNil(PercentDecoding.decode("abc%4"))
    }

    func testNonHexEscapeIsMalformed() {
        XCTAssertNil(PercentDecoding.decode("%zz"))
        XCTAssertNil(PercentDecoding.decode("%4g"))
        XCTAssertNil(PercentDecoding.decode("%%41"))
    }

    func testBytesThatAreNotUTF8AreRefused() {
        XCTAssertNil(PercentDecoding.decode("%FF"))
        XCTAssertNil(PercentDecoding.decode("%E2%82"), "truncated sequence")
        XCTAssertNil(PercentDecoding.decode("%C0%AF"), "overlong '/'")
        XCTAssertNil(PercentDecoding.decode("%ED%A0%80"), "surrogate")
        XCTAssertNil(PercentDecoding.decode("%F4%90%80%80"), "above U+10FFFF")
        XCTAssertNil(PercentDecoding.decode("%80"), "lone continuation byte")
    }

    func testEncodedNULDecodesSoValidationCanRefuseIt() {
        XCTAssertEqual(PercentDecoding.decode("a%00b"), "a\u{0}b")
    }

    func testPlusIsLiteralUnlessAskedOtherwise() {
        XCTAssertEqual(PercentDecoding.decode("a+b"), "a+b")
        XCTAssertEqual(PercentDecoding.decode("a+b", plusAsSpace: true), "a b")
    }

    func testEncodedPlusStaysPlusInQueryComponents() {
        XCTAssertEqual(PercentDecoding.decode("a%2Bb+c", plusAsSpace: true), "a+b c")
    }

    func testDecodesSubstrings() {
        let text = "/v1/providers/p%20q/vehicles"
        let segment = text.split(separator: "/")[2]
        XCTAssertEqual(PercentDecoding.decode(segment), "p q")
    }
}
