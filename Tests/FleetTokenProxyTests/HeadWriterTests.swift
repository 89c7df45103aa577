import XCTest
@testable import FleetTokenProxy

/// `HeadWriter` grows as it writes: no head, however many lines, can overrun it.
final class HeadWriterTests: XCTestCase {
    func testAHeadOfThousandsOfLiteralLinesIsWrittenWhole() {
        var expected: [UInt8] = Array("HTTP/1.1 200 OK\r\n".utf8)
        let written = HeadWriter.bytes { out in
            out.write(literal: "HTTP/1.1 200 OK\r\n")
            for i in 0..<5_000 {
                out.write(literal: "X-Line: ")
                out.decimal(i)
                out.write(literal: "\r\n")
            }
            out.write(literal: "\r\n")
        }
        for i in 0..<5_000 { expected += Array("X-Line: \(i)\r\n".utf8) }
        expected += Array("\r\n".utf8)
        XCTAssertGreaterThan(expected.count, 20 * HeadWriter.stackCapacity)
        XCTAssertEqual(written, expected)
    }

    func testEveryKindOfPieceCrossesTheStackBufferIntact() {
        let long = String(repeating: "v", count: 3 * HeadWriter.stackCapacity)
        let bytes = [UInt8](repeating: 0x62, count: HeadWriter.stackCapacity + 1)
        // Start each piece just short of the stack buffer's end, so it is the one that moves it.
        for lead in [HeadWriter.stackCapacity - 1, HeadWriter.stackCapacity - 3, HeadWriter.stackCapacity] {
            let padding = String(repeating: "p", count: lead)
            let written = HeadWriter.bytes { out in
                out.write(padding)
                out.byte(0x41)
                out.decimal(Int.max)
                out.write(long)
                out.write(bytes)
                bytes.withUnsafeBufferPointer { out.write($0) }
                out.write(literal: "!")
            }
            let expected = Array(padding.utf8) + [0x41] + Array("\(Int.max)".utf8) + Array(long.utf8) + bytes + bytes + [0x21]
            XCTAssertEqual(written, expected, "lead \(lead)")
        }
    }

    func testWithBytesHandsOverWhatWasWrittenAndNothingMore() {
        let count = HeadWriter.withBytes({ out in
            out.write(literal: "GET / HTTP/1.1\r\n")
            out.write("Host: example.com\r\n\r\n")
        }, use: { String(decoding: $0, as: UTF8.self) })
        XCTAssertEqual(count, "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n")
    }
}
