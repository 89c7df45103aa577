import XCTest
@testable import FleetTokenProxy

/// JSONTestSuite-style cases for the hand-written reader behind `JSONish.parse`, and for the
/// writer behind `jsonText`: what RFC 8259 accepts is read to the right value, what it
/// refuses is nil.
final class JSONReaderTests: XCTestCase {
    private func parse(_ text: String) -> JSONish? {
        JSONish.parse(Array(text.utf8))
    }

    func testScalarsAndWhitespace() {
        XCTAssertEqual(parse("true"), .bool(true))
        XCTAssertEqual(parse(" \t\r\nfalse\n "), .bool(false))
        XCTAssertEqual(parse("null"), .null)
        XCTAssertEqual(parse(#""""#), .string(""))
        XCTAssertEqual(parse("0"), .number(0))
        XCTAssertEqual(parse("-0"), .number(0))
        XCTAssertEqual(parse("[]"), .array([]))
        XCTAssertEqual(parse("{}"), .object([:]))
        XCTAssertEqual(parse(#" { "a" : [ 1 , { } ] } "#), .object(["a": .array([.number(1), .object([:])])]))
    }

    func testNumbersFollowTheGrammar() {
        let accepted: [(String, Double)] = [
            ("1795453745", 1_795_453_745), ("-12", -12), ("2.5", 2.5), ("-0.125", -0.125), ("1e3", 1000),
            ("1E+2", 100), ("25e-1", 2.5), ("0.5e1", 5), ("123456789012345678901", 1.2345678901234568e20),
            ("999999999999999", 999_999_999_999_999), ("1.7976931348623157e308", .greatestFiniteMagnitude),
        ]
        for (text, number) in accepted {
            XCTAssertEqual(parse(text), .number(number), text)
        }
        for text in ["01", "-01", "00", "+1", ".5", "1.", "1.e3", "1e", "1e+", "-", "--1", "0x10", "1_000",
                     "NaN", "Infinity", "-Infinity", "1e999", "-1e999", "1 2", "[01]", "[1.]"] {
            XCTAssertNil(parse(text), text)
        }
    }

    func testStringEscapes() {
        XCTAssertEqual(parse(#""\"\\\/\b\f\n\r\t""#), .string("\"\\/\u{8}\u{c}\n\r\t"))
        XCTAssertEqual(parse(#""\u0041\u00e9\u20AC""#), .string("Aé€"))
        XCTAssertEqual(parse(#""a\u0000b""#), .string("a\u{0}b"))
        // A surrogate pair is one scalar.
        XCTAssertEqual(parse(#""\uD83D\uDE00""#), .string("😀"))
        XCTAssertEqual(parse(#""x\ud834\udd1ey""#), .string("x𝄞y"))
        // UTF-8 as it is, unescaped.
        XCTAssertEqual(parse("\"é😀/\""), .string("é😀/"))
    }

    func testStringRefusals() {
        for text in [
            #""abc"#, #""\"#, #""\x41""#, #""\u12""#, #""\u12G4""#, #""\U0041""#, #""\'""#, "'a'",
            // Lone surrogates, high or low, and a high one followed by something else.
            #""\uD800""#, #""\uDC00""#, #""\uD800x""#, #""\uD800\u0041""#, #""\uD800\n""#, #""\uDE00\uD83D""#,
            // Control characters must be escaped.
            "\"a\nb\"", "\"a\tb\"", "\"\u{1}\"",
        ] {
            XCTAssertNil(parse(text), text)
        }
    }

    func testInvalidUTF8IsRefused() {
        for bytes: [UInt8] in [
            [0x22, 0xFF, 0x22], [0x22, 0xC3, 0x22], [0x22, 0xC0, 0xAF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22],
            [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], [0x22, 0x5C, 0x6E, 0xFE, 0x22],
        ] {
            XCTAssertNil(JSONish.parse(bytes), "\(bytes)")
        }
        // Invalid bytes outside a string are not JSON either.
        XCTAssertNil(JSONish.parse([0xEF, 0xBB, 0xBF, 0x7B, 0x7D]), "a byte-order mark")
    }

    func testStructureRefusals() {
        for text in [
            "", " ", "[", "]", "{", "}", "[1,]", "[,1]", "[1,,2]", #"{"a":1,}"#, #"{,"a":1}"#, #"{"a":1 "b":2}"#,
            #"{"a"}"#, #"{"a":}"#, #"{a:1}"#, #"{1:1}"#, "[1]]", "[1] x", "{}{}", "[1 /* c */]", "// c\n1",
            "tru", "truee", "nul", "True", "[true false]", "[\"a\" \"b\"]", "\u{0}", "[1]\u{0}",
        ] {
            XCTAssertNil(parse(text), text)
        }
    }

    func testDuplicateMembersTheLastWins() {
        XCTAssertEqual(parse(#"{"a":1,"a":2}"#), .object(["a": .number(2)]))
    }

    func testNestingIsBounded() {
        let deepest = JSONReader.maximumDepth
        XCTAssertNotNil(parse(String(repeating: "[", count: deepest) + String(repeating: "]", count: deepest)))
        XCTAssertNil(parse(String(repeating: "[", count: deepest + 1) + String(repeating: "]", count: deepest + 1)))
        XCTAssertNil(parse(String(repeating: #"{"a":"#, count: deepest + 1) + "1" + String(repeating: "}", count: deepest + 1)))
        // Far deeper than any stack would hold, refused without recursing that far.
        XCTAssertNil(parse(String(repeating: "[", count: 1_000_000)))
    }

    func testWriterEscapesAndSorts() {
        let value = JSONish.object([
            "z": .string("a\"b\\c/d\n\t\u{1}\u{1F}é"), "a": .array([.number(-3), .number(0.5), .number(1e20), .bool(false), .null]),
        ])
        XCTAssertEqual(value.jsonText, #"{"a":[-3,0.5,1e+20,false,null],"z":"a\"b\\c/d\n\t\u0001\u001fé"}"#)
        XCTAssertEqual(parse(value.jsonText), value)
        XCTAssertEqual(JSONish.number(.nan).jsonText, "null")
        XCTAssertEqual(JSONish.array([.number(.infinity)]).jsonText, "null")
    }
}
