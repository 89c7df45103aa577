import XCTest
@testable import FleetTokenProxy

final class ByteViewTests: XCTestCase {
    func testLiteralEqualityIsExactAndLengthChecked() {
        "content-type".withByteView { view in
            XCTAssertTrue(view == "content-type")
            XCTAssertFalse(view == "Content-Type")
            XCTAssertFalse(view == "content-typ")
            XCTAssertFalse(view == "content-types")
        }
        "".withByteView { view in
            XCTAssertTrue(view == "")
            XCTAssertTrue(view.isEmpty)
            XCTAssertNil(view.first)
        }
    }

    func testCaseInsensitiveEqualityFoldsOnlyASCIILetters() {
        "Content-LENGTH".withByteView { view in
            XCTAssertTrue(view.equalsLowercased("content-length"))
            XCTAssertFalse(view.equalsLowercased("content-lengt"))
        }
        // '[' (0x5B) and '{' (0x7B) differ by the case bit but are not letters.
        "a[".withByteView { XCTAssertFalse($0.equalsLowercased("a{")) }
        "X-Key".withByteView { a in "x-KEY".withByteView { b in XCTAssertTrue(a.equalsIgnoringCase(b)) } }
        "X-Key".withByteView { a in "x-KEYS".withByteView { b in XCTAssertFalse(a.equalsIgnoringCase(b)) } }
    }

    func testPrefixSliceAndText() {
        "application/grpc+proto".withByteView { view in
            XCTAssertTrue(view.hasPrefix("application/grpc"))
            XCTAssertFalse(view.hasPrefix("application/grpc+proto+x"))
            XCTAssertTrue(view.slice(12..<16) == "grpc")
            XCTAssertTrue(view.slice(3..<3).isEmpty)
            XCTAssertEqual(view.slice(17..<22).string, "proto")
            XCTAssertEqual(view.first, UInt8(ascii: "a"))
            XCTAssertEqual(view[11], UInt8(ascii: "/"))
        }
    }

    func testTwoViewsAreEqualOnlyByteForByte() {
        "PRI * HTTP".withByteView { a in
            "PRI * HTTP".withByteView { b in XCTAssertTrue(a == b) }
            "pri * HTTP".withByteView { b in XCTAssertFalse(a == b) }
            "PRI * HTT".withByteView { b in XCTAssertFalse(a == b) }
            XCTAssertTrue(a.slice(0..<0) == ByteView(start: nil, count: 0))
        }
    }

    func testThePrefaceMatchesOnlyItsOwnBytesAsTheyArrive() {
        "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\nfollowing frames".withByteView { XCTAssertEqual(HTTP2Preface.match($0.slice(0..<HTTP2Preface.count)), .matches) }
        "PRI * HTTP/2".withByteView { XCTAssertEqual(HTTP2Preface.match($0), .needMore) }
        "GET / HTTP/1.1\r\n".withByteView { XCTAssertEqual(HTTP2Preface.match($0), .differs) }
        "PRI * HTTP/1.1\r\n\r\nSM\r\n\r\n".withByteView { XCTAssertEqual(HTTP2Preface.match($0), .differs) }
    }
}
