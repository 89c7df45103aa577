@testable import FleetTokenProxy
import CEvent
import Foundation
import XCTest

/// `Transport` reads and writes over TLS. Reads: with read-ahead on (`readAhead()`, an HTTP/2
/// upstream), records that arrived together are all delivered at once, none left waiting in
/// OpenSSL's buffer for the peer's next bytes. Writes: once the handshake is done a write goes through `SSL_write` at
/// once (nothing left queued, no loop turn), and when the socket is full what `SSL_write` could
/// not take is queued so that bufferevent_openssl's retry finishes it: every byte arrives, in
/// order, however writes and `moveIn`s interleave with a peer that stops reading.
final class TLSTransportWriteTests: XCTestCase {
    private var dir: URL!
    private var loop: EventLoop!

    /// One end of the TLS pair: records its events and keeps what it reads.
    private final class End: TransportDelegate {
        var transport: Transport!
        var connected = false
        var failed: String?
        var received: [UInt8] = []

        func transportReadable(_ transport: Transport) {
            transport.forEachInputChain { received.append(contentsOf: $0); return true }
            transport.drainInput(transport.inputLength)
        }
        func transportWritable(_ transport: Transport) {}
        func transportEvent(_ transport: Transport, events: Int16) {
            let events = Int32(events)
            if events & BEV_EVENT_CONNECTED != 0 { connected = true }
            if events & (BEV_EVENT_ERROR | BEV_EVENT_EOF) != 0 { failed = transport.describe(events: events) }
        }
    }

    override func setUpWithError() throws {
        signal(SIGPIPE, SIG_IGN)
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("ftp-tlswrite-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let openssl = "/usr/bin/openssl"
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: openssl), "openssl CLI missing")
        let result = try runCommand(openssl, [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", path("key.pem"),
            "-out", path("cert.pem"), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
        ])
        if result.status != 0 { throw SidecarError("openssl failed: \(result.stderr)") }
        loop = try EventLoop()
    }

    override func tearDown() {
        loop = nil
        try? FileManager.default.removeItem(at: dir)
    }

    private func path(_ name: String) -> String { dir.appendingPathComponent(name).path }

    /// Runs the loop until `done` or 5 s passed; false on the timeout.
    private func run(until done: @escaping () -> Bool) -> Bool {
        var timedOut = false
        func check() {
            if done() { loop.stop() } else { loop.schedule(after: 0.002) { check() } }
        }
        loop.schedule(after: 0) { check() }
        let deadline = loop.schedule(after: 5) { [loop] in
            timedOut = true
            loop!.stop()
        }
        loop.run()
        deadline.cancel()
        return !timedOut && done()
    }

    /// A client and a server end joined by a socket pair, their handshake done.
    private func connectedPair() throws -> (client: End, server: End) {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds), 0)
        for fd in fds { _ = evutil_make_socket_nonblocking(fd) }
        let clientTLS = TLSContext.client(trust: try TrustStore.file(path("cert.pem")))
        let serverTLS = try TLSContext.server(certificateFile: path("cert.pem"), keyFile: path("key.pem"))
        let options = Int32(BEV_OPT_CLOSE_ON_FREE.rawValue)
        let clientBev = bufferevent_openssl_socket_new(loop.base, fds[0], try clientTLS.makeClientSSL(host: "127.0.0.1", port: 443),
                                                       BUFFEREVENT_SSL_CONNECTING, options)!
        let serverBev = bufferevent_openssl_socket_new(loop.base, fds[1], try serverTLS.makeServerSSL(), BUFFEREVENT_SSL_ACCEPTING, options)!
        let client = End(), server = End()
        client.transport = Transport(bev: clientBev, delegate: client)
        server.transport = Transport(bev: serverBev, delegate: server)
        client.transport.enableReading()
        server.transport.enableReading()
        XCTAssertTrue(run { client.connected && server.connected }, "handshake: \(client.failed ?? server.failed ?? "timed out")")
        return (client, server)
    }

    private func pattern(_ count: Int, seed: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &* 7 &+ $0 >> 8) }
    }

    /// Writes `count` records of `size` bytes from `end`, seeds from `firstSeed` on: each write
    /// is one `SSL_write`, one record, gone before the loop runs again. Returns their bytes.
    private func writeRecords(from end: End, count: Int, size: Int, firstSeed: Int,
                              file: StaticString = #filePath, line: UInt = #line) -> [UInt8] {
        var written: [UInt8] = []
        for seed in firstSeed..<firstSeed + count {
            let record = pattern(size, seed: seed)
            end.transport.write(record)
            XCTAssertEqual(end.transport.outputLength, 0, file: file, line: line)
            written += record
        }
        return written
    }

    /// Runs the loop until `end` has received as many bytes as `bytes`, and checks they are
    /// those bytes.
    private func assertReceives(_ end: End, exactly bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(run { end.received.count == bytes.count }, "received \(end.received.count) of \(bytes.count)",
                      file: file, line: line)
        XCTAssertEqual(end.received, bytes, file: file, line: line)
    }

    func testAWriteAfterTheHandshakeGoesThroughSSLWriteAtOnce() throws {
        let (client, server) = try connectedPair()
        let request = pattern(700, seed: 1)
        client.transport.write(request)
        XCTAssertEqual(client.transport.outputLength, 0, "the write went out at once, nothing queued behind a loop turn")
        assertReceives(server, exactly: request)
        let answer = pattern(300, seed: 2)
        server.transport.write(answer)
        XCTAssertEqual(server.transport.outputLength, 0, "the accepting side too")
        assertReceives(client, exactly: answer)
        client.transport.close()
        server.transport.close()
    }

    /// The peer stops reading: the socket fills, `SSL_write` stops part-way, the rest is
    /// queued, and later writes and moves queue behind it; all arrive in order once it reads.
    func testWritesPastAFullSocketArriveWholeAndInOrder() throws {
        let (client, server) = try connectedPair()
        server.transport.disableReading()
        var expected: [UInt8] = []
        let first = pattern(3 << 20, seed: 3)
        client.transport.write(first)
        expected += first
        XCTAssertGreaterThan(client.transport.outputLength, 0, "3 MiB fill a socket pair: some were queued")
        let second = pattern(5000, seed: 4)
        client.transport.write(second)
        expected += second
        let body = EventBuffer()
        let moved = pattern(200_000, seed: 5)
        moved.withUnsafeBytes { _ = evbuffer_add(body.pointer, $0.baseAddress, $0.count) }
        XCTAssertEqual(client.transport.moveIn(from: body, count: moved.count), moved.count)
        expected += moved
        server.transport.enableReading()
        XCTAssertTrue(run { server.received.count >= expected.count || server.failed != nil }, "received \(server.received.count)")
        XCTAssertNil(server.failed)
        XCTAssertEqual(server.received.count, expected.count)
        XCTAssertTrue(server.received == expected, "the bytes arrived as written, in order")
        // Drained: the next write goes directly again.
        XCTAssertTrue(run { client.transport.outputLength == 0 })
        let last = pattern(900, seed: 6)
        client.transport.write(last)
        XCTAssertEqual(client.transport.outputLength, 0)
        XCTAssertTrue(run { server.received.count == expected.count + last.count })
        XCTAssertTrue(server.received.suffix(last.count).elementsEqual(last))
        client.transport.close()
        server.transport.close()
    }

    /// A body moved in from a buffer of several chains while the socket has room goes out at
    /// once, whole.
    func testAMoveOfSeveralChainsGoesOutAtOnce() throws {
        let (client, server) = try connectedPair()
        let body = EventBuffer()
        var expected: [UInt8] = []
        for seed in 0..<5 {
            let piece = pattern(3000, seed: 10 + seed)
            // Added to a buffer of its own, then moved: evbuffer_add_buffer moves chains, so
            // each piece stays a chain of its own.
            let own = EventBuffer()
            piece.withUnsafeBytes { _ = evbuffer_add(own.pointer, $0.baseAddress, $0.count) }
            evbuffer_add_buffer(body.pointer, own.pointer)
            expected += piece
        }
        XCTAssertGreaterThan(evbuffer_peek(body.pointer, -1, nil, nil, 0), 1)
        XCTAssertEqual(client.transport.moveIn(from: body, count: expected.count), expected.count)
        XCTAssertEqual(client.transport.outputLength, 0)
        XCTAssertTrue(run { server.received.count == expected.count })
        XCTAssertTrue(server.received == expected)
        client.transport.close()
        server.transport.close()
    }

    /// Five records in the socket before the client reads: with read-ahead OpenSSL takes them in
    /// one read, bufferevent_openssl decrypts one or two, and the rest must still reach the
    /// delegate now; the peer sends nothing more that would make the socket readable again.
    func testRecordsReadAheadTogetherAllArriveAtOnce() throws {
        let (client, server) = try connectedPair()
        client.transport.readAhead()
        let records = writeRecords(from: server, count: 5, size: 120, firstSeed: 20)
        assertReceives(client, exactly: records)
        // Reading ahead goes on working for later records, and the other way.
        let later = pattern(40_000, seed: 30)
        server.transport.write(later)
        assertReceives(client, exactly: records + later)
        let request = pattern(700, seed: 31)
        client.transport.write(request)
        assertReceives(server, exactly: request)
        client.transport.close()
        server.transport.close()
    }

    /// A peer that keeps records coming must not grow the input without end inside one read
    /// callback: at most `readAheadTakeLimit` bytes are taken, and what is left comes in later
    /// turns of the loop, although the socket has nothing more to make it readable.
    func testRecordsPastTheTakeLimitComeInLaterTurns() throws {
        let (client, server) = try connectedPair()
        client.transport.readAhead()
        client.transport.readAheadTakeLimit = 100
        assertReceives(client, exactly: writeRecords(from: server, count: 8, size: 120, firstSeed: 40))
        client.transport.close()
        server.transport.close()
    }
}
