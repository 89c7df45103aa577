import CEvent
import XCTest
@testable import FleetTokenProxy

#if canImport(Glibc)
import Glibc
#endif

/// The input side of a `Transport` as the HTTP/1.1 connections read it: a contiguous view of
/// what arrived (`withInput`), then draining or removing what was consumed.
final class TransportInputTests: XCTestCase {
    private final class Ignoring: TransportDelegate {
        func transportReadable(_ transport: Transport) {}
        func transportWritable(_ transport: Transport) {}
        func transportEvent(_ transport: Transport, events: Int16) {}
    }

    private var loop: EventLoop!
    private let delegate = Ignoring()
    private var transport: Transport!

    override func setUpWithError() throws {
        loop = try EventLoop()
        let bev = try XCTUnwrap(bufferevent_socket_new(loop.base, -1, 0))
        transport = Transport(bev: bev, delegate: delegate)
    }

    override func tearDown() {
        transport?.close()
        transport = nil
        loop = nil
    }

    /// Puts `pieces` in the input as separate chains, as several reads would. (Only the
    /// bufferevent's own reads may add there: its end is frozen for anyone else.)
    private func arrive(_ pieces: [String]) {
        evbuffer_unfreeze(transport.input, 0)
        defer { evbuffer_freeze(transport.input, 0) }
        for piece in pieces {
            let part = EventBuffer()
            piece.withByteView { part.add($0) }
            evbuffer_add_buffer(transport.input, part.pointer)
        }
    }

    func testWithInputSeesTheFirstBytesContiguousWithoutConsumingThem() {
        arrive(["HTTP/1.1 200 OK\r\n", "Content-Length: 0\r\n", "\r\nnext"])
        XCTAssertEqual(transport.withInput(upTo: 17) { $0.string }, "HTTP/1.1 200 OK\r\n")
        XCTAssertEqual(transport.withInput(upTo: 38) { $0 == "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n" }, true)
        XCTAssertEqual(transport.withInput(upTo: 1 << 20) { $0.count }, 42, "at most what arrived")
        XCTAssertEqual(transport.inputLength, 42)
    }

    func testAHeadParsedFromTheViewIsDrainedAndTheRestStays() {
        arrive(["HTTP/1.1 204 No Content\r\n", "X-A: 1\r\n\r\n", "tail"])
        guard case .complete(let head, let length) = transport.withInput(upTo: 8192, {
            HTTP1Parser.parseResponse($0.raw, maxHeadBytes: 8192, maxHeaderCount: 16)
        }) else {
            return XCTFail("head not parsed across chains")
        }
        XCTAssertEqual(head.status, 204)
        transport.drainInput(length)
        var out = [UInt8](repeating: 0, count: 8)
        XCTAssertEqual(out.withUnsafeMutableBytes { transport.removeInput(into: $0) }, 4)
        XCTAssertEqual(String(decoding: out.prefix(4), as: UTF8.self), "tail")
        XCTAssertEqual(transport.inputLength, 0)
    }

    func testAnEmptyViewWithoutInputOrOnceClosed() {
        XCTAssertEqual(transport.withInput(upTo: 10) { $0.count }, 0)
        arrive(["x"])
        XCTAssertEqual(transport.withInput(upTo: 10) { $0.count }, 1)
        transport.close()
        XCTAssertEqual(transport.withInput(upTo: 10) { $0.count }, 0)
        transport.drainInput(1)
        var out = [UInt8](repeating: 0, count: 1)
        XCTAssertEqual(out.withUnsafeMutableBytes { transport.removeInput(into: $0) }, 0)
    }

    func testRemoveInputIntoABufferMovesTheFrontBytesAndKeepsTheRest() {
        arrive(["0123", "4567", "89"])
        let taken = EventBuffer()
        "<".withByteView { taken.add($0) }
        XCTAssertEqual(transport.removeInput(6, into: taken), 6)
        XCTAssertEqual(taken.withPulledUp(taken.count) { $0.string }, "<012345", "added behind what it held")
        XCTAssertEqual(transport.withInput(upTo: 10) { $0.string }, "6789")
        XCTAssertEqual(transport.removeInput(100, into: taken), 4, "at most what arrived")
        XCTAssertEqual(transport.inputLength, 0)
        XCTAssertEqual(transport.removeInput(0, into: taken), 0)
        arrive(["x"])
        transport.close()
        XCTAssertEqual(transport.removeInput(1, into: taken), 0, "nothing once closed")
        XCTAssertEqual(taken.count, 11)
    }

    func testForEachInputChainVisitsThePiecesInOrderUpToTheLimitAndConsumesNothing() {
        arrive(["abc", "defg", "hi"])
        var pieces: [String] = []
        transport.forEachInputChain(limit: 5) { pieces.append(String(decoding: $0, as: UTF8.self)); return true }
        XCTAssertEqual(pieces, ["abc", "de"], "cut at the limit")
        pieces = []
        transport.forEachInputChain { pieces.append(String(decoding: $0, as: UTF8.self)); return pieces.count < 2 }
        XCTAssertEqual(pieces, ["abc", "defg"], "stops when the body says so")
        pieces = []
        transport.forEachInputChain { pieces.append(String(decoding: $0, as: UTF8.self)); return true }
        XCTAssertEqual(pieces.joined(), "abcdefghi")
        XCTAssertEqual(transport.inputLength, 9)
        transport.close()
        transport.forEachInputChain { _ in XCTFail("no input once closed"); return true }
    }

    func testMoveInFromAnotherTransportsInputTakesItsFrontBytes() throws {
        let bev = try XCTUnwrap(bufferevent_socket_new(loop.base, -1, 0))
        // No socket to write to: the bytes stay queued in the output.
        bufferevent_disable(bev, Int16(EV_WRITE))
        let upstream = Transport(bev: bev, delegate: delegate)
        defer { upstream.close() }
        arrive(["body-", "bytes", "+next"])
        XCTAssertEqual(upstream.moveIn(fromInputOf: transport, count: 10), 10)
        XCTAssertEqual(upstream.outputLength, 10)
        XCTAssertEqual(EventBuffer.withPulledUp(upstream.output, 10) { $0.string }, "body-bytes")
        XCTAssertEqual(transport.withInput(upTo: 10) { $0.string }, "+next")
        XCTAssertEqual(upstream.moveIn(fromInputOf: transport, count: 0), 0)
        transport.close()
        XCTAssertEqual(upstream.moveIn(fromInputOf: transport, count: 5), 0, "nothing from a closed transport")
        XCTAssertEqual(upstream.outputLength, 10)
    }
}
