import CEvent
import XCTest
@testable import FleetTokenProxy

final class EventBufferTests: XCTestCase {
    private func contents(_ buffer: borrowing EventBuffer) -> String {
        buffer.withPulledUp(buffer.count) { $0.string }
    }

    func testAddRemoveDrainAndCount() {
        let buffer = EventBuffer()
        XCTAssertTrue(buffer.isEmpty)
        "hello ".withByteView { buffer.add($0) }
        "world".withByteView { buffer.add($0) }
        "".withByteView { buffer.add($0) }
        XCTAssertEqual(buffer.count, 11)
        var out = [UInt8](repeating: 0, count: 4)
        XCTAssertEqual(out.withUnsafeMutableBytes { buffer.remove(into: $0) }, 4)
        XCTAssertEqual(String(decoding: out, as: UTF8.self), "hell")
        buffer.drain(2)
        XCTAssertEqual(contents(buffer), "world")
        buffer.drain(100)
        XCTAssertTrue(buffer.isEmpty)
        XCTAssertEqual(out.withUnsafeMutableBytes { buffer.remove(into: $0) }, 0, "nothing left to remove")
    }

    func testCopyOutKeepsTheBytes() {
        let buffer = EventBuffer()
        "abcdef".withByteView { buffer.add($0) }
        var out = [UInt8](repeating: 0, count: 10)
        XCTAssertEqual(out.withUnsafeMutableBytes { buffer.copyOut(into: $0) }, 6)
        XCTAssertEqual(String(decoding: out.prefix(6), as: UTF8.self), "abcdef")
        XCTAssertEqual(buffer.count, 6)
    }

    func testPrependMovesAnotherBufferToTheFront() {
        let body = EventBuffer()
        let sent = EventBuffer()
        "-rest".withByteView { body.add($0) }
        "first".withByteView { sent.add($0) }
        body.prepend(sent)
        XCTAssertEqual(contents(body), "first-rest")
        XCTAssertTrue(sent.isEmpty, "the bytes moved, not copied")
    }

    func testPullUpMakesSeveralChainsOneViewAndKeepsThem() {
        let buffer = EventBuffer()
        // Buffers added whole keep their own chains: the bytes are in three pieces.
        for piece in ["GET / HTTP/1.1\r\n", "Host: x\r\n", "\r\nbody"] {
            let part = EventBuffer()
            piece.withByteView { part.add($0) }
            evbuffer_add_buffer(buffer.pointer, part.pointer)
        }
        XCTAssertGreaterThan(evbuffer_peek(buffer.pointer, -1, nil, nil, 0), 1)
        XCTAssertEqual(buffer.withPulledUp(27) { $0.string }, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(buffer.withPulledUp(1000) { $0.count }, 31, "at most what is held")
        XCTAssertEqual(buffer.count, 31, "a pull-up consumes nothing")
        XCTAssertEqual(EventBuffer().withPulledUp(10) { $0.count }, 0, "an empty buffer gives an empty view")
    }

    func testAddFromRawBytesAppendsACopy() {
        let buffer = EventBuffer()
        var bytes: [UInt8] = Array("frame".utf8)
        bytes.withUnsafeBytes { buffer.add($0) }
        bytes[0] = UInt8(ascii: "F")
        bytes.withUnsafeBytes { buffer.add(UnsafeRawBufferPointer(rebasing: $0[1..<3])) }
        [UInt8]().withUnsafeBytes { buffer.add($0) }
        XCTAssertEqual(contents(buffer), "framera", "a copy: changing the source later changes nothing")
    }

    func testDrainAllEmptiesTheBufferAndSaysHowMuchWasThere() {
        let buffer = EventBuffer()
        XCTAssertEqual(buffer.drainAll(), 0)
        for piece in ["one", "two", "three"] {
            let part = EventBuffer()
            piece.withByteView { part.add($0) }
            evbuffer_add_buffer(buffer.pointer, part.pointer)
        }
        XCTAssertEqual(buffer.drainAll(), 11)
        XCTAssertTrue(buffer.isEmpty)
        "after".withByteView { buffer.add($0) }
        XCTAssertEqual(contents(buffer), "after", "still usable")
    }
}
