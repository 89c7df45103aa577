import CEvent
import CNghttp2
import XCTest
@testable import FleetTokenProxy

/// Every way nghttp2 ends a connection comes to `H2Session.end` (RFC 9113 §5.4.1): a client
/// session, as the sidecar's upstream side runs it, is fed a server's frames in memory (a
/// bufferevent without a socket) and flushed; no socket, no clock.
final class H2SessionEndTests: XCTestCase {
    private var loop: EventLoop!
    private let quiet = QuietH2Peer()
    private var transport: Transport!
    private var session: H2Session!

    override func setUpWithError() throws {
        loop = try EventLoop()
        transport = Transport(bev: try XCTUnwrap(bufferevent_socket_new(loop.base, -1, 0)), delegate: quiet)
        // Without a socket the bufferevent keeps its input's end and its output's start frozen:
        // the test writes the one and reads the other itself.
        evbuffer_unfreeze(transport.input, 0)
        evbuffer_unfreeze(transport.output, 1)
        session = try H2Session(isServer: false, transport: transport, delegate: quiet)
        session.submitSettings(maxConcurrentStreams: 100)
        var head = H2HeaderList()
        head.append(name: ":method", value: "GET")
        head.append(name: ":scheme", value: "https")
        head.append(name: ":authority", value: "a")
        head.append(name: ":path", value: "/")
        XCTAssertEqual(session.submitRequest(head, hasBody: false), 1)
        _ = flushed() // the preface, SETTINGS and the request
        // The server's SETTINGS, as every server starts.
        receive(frame(type: 4, stream: 0, []))
        XCTAssertNil(session.end, "a session that goes on has no end")
    }

    override func tearDown() {
        session.close()
        transport.close()
    }

    func testAFrameOverTheFrameSizeEndsItWithFrameSizeErrorOnceTheGoAwayIsOut() {
        receive(frame(type: 1, flags: 0x4, stream: 1, [UInt8](repeating: 0, count: 16_385)))
        expectLocalError(NGHTTP2_FRAME_SIZE_ERROR)
    }

    func testAHeaderBlockThatDoesNotDecodeEndsItWithCompressionError() {
        receive(frame(type: 1, flags: 0x5, stream: 1, [0x80]))
        expectLocalError(NGHTTP2_COMPRESSION_ERROR)
    }

    func testDataOnStreamZeroEndsItWithProtocolError() {
        receive(frame(type: 0, stream: 0, [1, 2, 3, 4]))
        expectLocalError(NGHTTP2_PROTOCOL_ERROR)
    }

    func testAWindowUpdateOverflowEndsItWithFlowControlError() {
        receive(frame(type: 8, stream: 0, [0x7f, 0xff, 0xff, 0xff]))
        expectLocalError(NGHTTP2_FLOW_CONTROL_ERROR)
    }

    func testAResetOfAStreamNeverOpenedEndsItWithProtocolError() {
        receive(frame(type: 3, stream: 201, [0, 0, 0, 8]))
        expectLocalError(NGHTTP2_PROTOCOL_ERROR)
    }

    /// More SETTINGS than the session will queue ACKs for (`H2Limits.maxOutboundAcks`): nghttp2
    /// fails; the session reads no more and says why in a GOAWAY before it ends.
    func testASettingsFloodFailsItAndAGoAwaySaysEnhanceYourCalm() {
        receive((0..<200).flatMap { _ in frame(type: 4, stream: 0, []) })
        XCTAssertEqual(session.end?.cause, .fatal(libraryCode: NGHTTP2_ERR_FLOODED.rawValue), "ended before the flush")
        XCTAssertEqual(H2LibraryProbe.goAwayCodes(in: flushed()), [NGHTTP2_ENHANCE_YOUR_CALM.rawValue])
        XCTAssertEqual(session.end?.isConnectionError, true)
    }

    /// The peer's GOAWAY with an error: the peer closes, so the session is over at once, its
    /// open stream with it.
    func testThePeersGoAwayWithAnErrorEndsIt() {
        receive(frame(type: 7, stream: 0, [0, 0, 0, 1, 0, 0, 0, 2]))
        XCTAssertEqual(session.end?.cause, .peerError(code: NGHTTP2_INTERNAL_ERROR.rawValue))
        XCTAssertEqual(quiet.goAways.first?.last, 1, "the owner learns which streams were processed")
    }

    /// A graceful GOAWAY that leaves the open stream to finish ends nothing; one that leaves no
    /// stream open ends the session without an error.
    func testAGracefulGoAwayEndsItOnlyOnceNoStreamIsLeft() {
        receive(frame(type: 7, stream: 0, [0, 0, 0, 1, 0, 0, 0, 0]))
        _ = flushed()
        XCTAssertNil(session.end, "stream 1 may still be answered")
        receive(frame(type: 3, stream: 1, [0, 0, 0, 0]))
        _ = flushed()
        XCTAssertEqual(session.end?.cause, .finished)
        XCTAssertEqual(session.end?.isConnectionError, false)
    }

    // MARK: Helpers

    /// Nothing ends while the GOAWAY waits in nghttp2; once it is written the session ends
    /// with `code`, the GOAWAY carrying it.
    private func expectLocalError(_ code: nghttp2_error_code, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertNil(session.end, "the GOAWAY is not out yet", file: file, line: line)
        XCTAssertEqual(H2LibraryProbe.goAwayCodes(in: flushed()), [code.rawValue], file: file, line: line)
        XCTAssertEqual(session.end?.cause, .localError(code: code.rawValue), file: file, line: line)
        XCTAssertEqual(session.end?.isConnectionError, true, file: file, line: line)
    }

    private func receive(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { _ = evbuffer_add(transport.input, $0.baseAddress, $0.count) }
        session.receiveInput()
    }

    /// Writes what the session has queued and takes it out of the transport's output.
    private func flushed() -> [UInt8] {
        session.flush()
        let output = transport.output
        var bytes = [UInt8](repeating: 0, count: evbuffer_get_length(output))
        _ = bytes.withUnsafeMutableBytes { evbuffer_remove(output, $0.baseAddress, $0.count) }
        return bytes
    }

    private func frame(type: UInt8, flags: UInt8 = 0, stream: Int32, _ payload: [UInt8]) -> [UInt8] {
        let n = payload.count, id = UInt32(stream)
        return [UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff), type, flags,
                UInt8(id >> 24 & 0x7f), UInt8(id >> 16 & 0xff), UInt8(id >> 8 & 0xff), UInt8(id & 0xff)] + payload
    }
}
