import CEvent
import XCTest
@testable import FleetTokenProxy

#if canImport(Glibc)
import Glibc
#endif

/// A plain-socket `Transport` reading through `DirectReads` (no FIONREAD) keeps the
/// bufferevent's read semantics: high-water mark, read timeout, EOF, reading on and off.
final class DirectReadsTests: XCTestCase {
    private final class Recorder: TransportDelegate {
        var events: [Int32] = []
        var readableCalls = 0
        /// Drain the input on every read callback.
        var consume = false
        var consumed = 0

        func transportReadable(_ transport: Transport) {
            readableCalls += 1
            if consume {
                consumed += transport.inputLength
                evbuffer_drain(transport.input, transport.inputLength)
            }
        }
        func transportWritable(_ transport: Transport) {}
        func transportEvent(_ transport: Transport, events: Int16) { self.events.append(Int32(events)) }
    }

    private var loop: EventLoop!
    private var peer: Int32 = -1
    private var recorder: Recorder!
    private var transport: Transport!

    override func setUpWithError() throws {
        loop = try EventLoop()
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds), 0)
        peer = fds[1]
        XCTAssertEqual(fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK), 0)
        recorder = Recorder()
        let bev = try XCTUnwrap(bufferevent_socket_new(loop.base, fds[0], Int32(BEV_OPT_CLOSE_ON_FREE.rawValue)))
        transport = Transport(bev: bev, delegate: recorder, directWrites: true)
        transport.readDirectly()
    }

    override func tearDown() {
        transport?.close()
        transport = nil
        if peer >= 0 { close(peer) }
        loop = nil
    }

    private func run(for seconds: Double) {
        loop.schedule(after: seconds) { [loop] in loop!.stop() }
        loop.run()
    }

    private func send(_ count: Int) {
        let bytes = [UInt8](repeating: 0x61, count: count)
        XCTAssertEqual(bytes.withUnsafeBytes { Glibc.send(peer, $0.baseAddress, count, 0) }, count)
    }

    func testReadsStopAtTheHighWaterMarkAndResumeOnceTheInputIsDrained() {
        transport.setReadHighWater(1000)
        transport.enableReading()
        send(10_000)
        run(for: 0.2)
        XCTAssertEqual(transport.inputLength, 1000, "read up to the mark, then no more")
        XCTAssertGreaterThan(recorder.readableCalls, 0)
        let callsWhileFull = recorder.readableCalls

        recorder.consume = true
        recorder.consumed = transport.inputLength
        evbuffer_drain(transport.input, transport.inputLength)
        run(for: 0.2)
        XCTAssertGreaterThan(recorder.readableCalls, callsWhileFull)
        XCTAssertEqual(recorder.consumed, 10_000)
        XCTAssertEqual(recorder.events, [])
    }

    func testReadingOffReadsNothingAndOnAgainReadsWhatWaited() {
        transport.enableReading()
        transport.disableReading()
        send(300)
        run(for: 0.1)
        XCTAssertEqual(transport.inputLength, 0)
        transport.enableReading()
        run(for: 0.1)
        XCTAssertEqual(transport.inputLength, 300)
    }

    func testReadTimeoutIsReportedOnceAndTurnsReadingOff() {
        transport.setTimeouts(read: 0.05, write: nil)
        transport.enableReading()
        run(for: 0.3)
        XCTAssertEqual(recorder.events, [BEV_EVENT_READING | BEV_EVENT_TIMEOUT])
        // Reading is off after the timeout: bytes wait in the socket.
        send(10)
        run(for: 0.1)
        XCTAssertEqual(transport.inputLength, 0)
    }

    /// A kept-alive connection's new exchange restarts the read timeout: the answer gets the
    /// whole timeout, not what was left of it after the connection sat idle.
    func testRestartingTheReadTimeoutCountsItFromNow() {
        assertRestartCountsFromNow(transport, recorder)
    }

    /// The same through a bufferevent's own reads (TLS connections).
    func testRestartingTheReadTimeoutOfABuffereventCountsItFromNow() throws {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds), 0)
        defer { close(fds[1]) }
        let other = Recorder()
        let bev = try XCTUnwrap(bufferevent_socket_new(loop.base, fds[0], Int32(BEV_OPT_CLOSE_ON_FREE.rawValue)))
        let buffered = Transport(bev: bev, delegate: other, directWrites: true)
        defer { buffered.close() }
        assertRestartCountsFromNow(buffered, other)
    }

    /// A 0.3 s read timeout restarted 0.2 s in has not fired 0.4 s in, and has 0.7 s in.
    private func assertRestartCountsFromNow(_ transport: Transport, _ recorder: Recorder,
                                            file: StaticString = #filePath, line: UInt = #line) {
        transport.setTimeouts(read: 0.3, write: nil)
        transport.enableReading()
        run(for: 0.2)
        transport.restartReadTimeout()
        run(for: 0.2)
        XCTAssertEqual(recorder.events, [], "timed out from the first start, not the restart", file: file, line: line)
        run(for: 0.3)
        XCTAssertEqual(recorder.events, [BEV_EVENT_READING | BEV_EVENT_TIMEOUT], file: file, line: line)
    }

    func testEndOfStreamIsReportedAsAReadingEOFAfterTheLastBytes() {
        recorder.consume = true
        transport.enableReading()
        send(500)
        shutdown(peer, Int32(SHUT_WR))
        run(for: 0.2)
        XCTAssertEqual(recorder.consumed, 500)
        XCTAssertEqual(recorder.events, [BEV_EVENT_READING | BEV_EVENT_EOF])
    }
}
