import CEvent
@testable import FleetTokenProxy
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A stand-in Fleet Engine that speaks HTTP/2 (TLS with ALPN `h2`, as Fleet Engine's front end
/// does, or h2c), on its own loop thread, built on the sidecar's own nghttp2 session: the
/// upstream of the Swift tests of the default flow (an HTTP/1.1 client's REST call carried as a
/// stream, docs/CONTRACT.md §6). It records every request whole (headers and body, by
/// connection and stream) and answers each as the test's `script` says: an answer, a
/// REFUSED_STREAM, a reset, a GOAWAY that leaves the stream out, or a body sent only as the
/// sidecar gives credit for it; a gRPC answer with its trailers, or trailers-only; a head then a
/// reset; nothing at all; or one of the faults of `H2Fault` (raw frames nghttp2 would not send).
/// It counts the connections it accepted and those still open, and the streams the sidecar
/// reset.
///
/// `@unchecked Sendable`: the sessions live on the loop thread; the test thread reads the
/// recorded requests under `lock`.
final class ScriptedH2Upstream: @unchecked Sendable {
    /// What to do with a request, once its END_STREAM arrived.
    enum Answer {
        /// A head with `status`, then `body` (a `content-length` with it).
        case answer(status: Int, body: [UInt8])
        /// RST_STREAM REFUSED_STREAM: not processed.
        case refuse
        /// GOAWAY whose last stream is below this one (RFC 9113 §6.8: not processed), then the
        /// connection closes.
        case goAwayBefore
        /// RST_STREAM INTERNAL_ERROR before any answer.
        case reset
        /// A gRPC answer: a head (200, `application/grpc`), `message` as one gRPC message if
        /// any, then trailers with `grpc-status: status`.
        case grpc(message: [UInt8]?, status: Int)
        /// A trailers-only gRPC answer: one HEADERS with END_STREAM holding `grpc-status: status`.
        case grpcTrailersOnly(status: Int)
        /// The head (`status`; `application/grpc` when `grpc`) and a first DATA frame, then
        /// RST_STREAM INTERNAL_ERROR: an answer that breaks once begun.
        case resetAfterHead(status: Int, grpc: Bool)
        /// No answer: the stream stays open until the sidecar resets it.
        case hang
        /// A fault on the connection instead of an answer.
        case fault(H2Fault)

        static func ok(_ text: String = #"{"name":"ok"}"#) -> Answer { .answer(status: 200, body: Array(text.utf8)) }
    }

    struct Request {
        var connection: Int
        var stream: Int32
        var fields: [(name: String, value: String)]
        var body: [UInt8]
        func values(_ name: String) -> [String] { fields.filter { $0.name == name }.map(\.value) }
        var path: String { values(":path").first ?? "" }
        var isGRPC: Bool { values("content-type").first?.hasPrefix("application/grpc") ?? false }
    }

    /// A stream the sidecar reset (RST_STREAM with `errorCode`).
    struct Reset: Equatable {
        var connection: Int
        var stream: Int32
        var errorCode: UInt32
    }

    private let loop: EventLoop
    private let tls: TLSContext?
    private let script: @Sendable (Request, Int) -> Answer
    private var listener: Listener?
    private var connections: [ObjectIdentifier: ScriptedH2Connection] = [:]
    private var connectionsAccepted = 0
    private let lock = NSLock()
    private var recorded: [Request] = []
    private var resetsSeen: [Reset] = []
    private var openConnections: Set<Int> = []
    private let stopped = DispatchSemaphore(value: 0)
    private(set) var address = ""

    /// Starts on an ephemeral loopback port; `tls`: serve TLS with this certificate and key.
    init(tls: (cert: String, key: String)? = nil, script: @escaping @Sendable (Request, Int) -> Answer) throws {
        loop = try EventLoop()
        self.tls = try tls.map { try TLSContext.server(certificateFile: $0.cert, keyFile: $0.key, alpn: ["h2"]) }
        self.script = script
        let listener = try Listener(loop: loop, address: .inet(host: "127.0.0.1", port: 0)) { [unowned self] fd in accept(fd) }
        self.listener = listener
        address = listener.boundDescription
        let loop = self.loop
        let stopped = self.stopped
        Thread {
            loop.run()
            stopped.signal()
        }.start()
    }

    /// Every request answered or refused so far, in the order they ended.
    var requests: [Request] { lock.lock(); defer { lock.unlock() }; return recorded }

    /// Waits until `count` requests arrived (or `timeout` passed); returns them.
    @discardableResult
    func waitForRequests(_ count: Int, timeout: Double = 5) -> [Request] {
        let deadline = Date().addingTimeInterval(timeout)
        while requests.count < count && Date() < deadline { usleep(10_000) }
        return requests
    }

    var connectionCount: Int { lock.lock(); defer { lock.unlock() }; return connectionsAccepted }

    /// Connections accepted and not closed yet (by either side).
    var openConnectionCount: Int { lock.lock(); defer { lock.unlock() }; return openConnections.count }

    /// Whether connection `number` (as `Request.connection` names it) is still open.
    func isOpen(connection number: Int) -> Bool { lock.lock(); defer { lock.unlock() }; return openConnections.contains(number) }

    /// Streams of requests the sidecar reset, in order.
    var resets: [Reset] { lock.lock(); defer { lock.unlock() }; return resetsSeen }

    func stop() {
        let done = DispatchSemaphore(value: 0)
        loop.execute { [self] in
            listener?.close()
            for connection in Array(connections.values) { connection.close() }
            done.signal()
        }
        done.wait()
        loop.stop()
        stopped.wait()
    }

    private func accept(_ fd: Int32) {
        guard let bev = BufferedHTTPServer.bufferevent(accepted: fd, loop: loop, tls: tls) else { return }
        lock.lock()
        connectionsAccepted += 1
        let number = connectionsAccepted
        lock.unlock()
        guard let connection = try? ScriptedH2Connection(bev: bev, upstream: self, number: number, isTLS: tls != nil) else { return }
        connections[ObjectIdentifier(connection)] = connection
        lock.lock()
        openConnections.insert(number)
        lock.unlock()
    }

    fileprivate func answer(for request: Request) -> Answer {
        lock.lock()
        let index = recorded.count
        recorded.append(request)
        lock.unlock()
        return script(request, index)
    }

    fileprivate func closed(_ connection: ScriptedH2Connection) {
        guard connections.removeValue(forKey: ObjectIdentifier(connection)) != nil else { return }
        lock.lock()
        openConnections.remove(connection.number)
        lock.unlock()
    }

    fileprivate func reset(_ reset: Reset) {
        lock.lock()
        resetsSeen.append(reset)
        lock.unlock()
    }
}

/// One connection of a `ScriptedH2Upstream`: its session, and the requests and answers of its
/// streams.
private final class ScriptedH2Connection: TransportDelegate, H2SessionDelegate {
    private var transport: Transport!
    private var session: H2Session!
    private unowned let upstream: ScriptedH2Upstream
    let number: Int
    private var requests: [Int32: ScriptedH2Upstream.Request] = [:]
    /// Answer bodies still to send, how far each went, and the trailers that end it.
    private var bodies: [Int32: (bytes: [UInt8], sent: Int, trailers: H2HeaderList?)] = [:]
    /// Streams reset once their first DATA frame is out.
    private var resetAfterFirstData: Set<Int32> = []
    /// Faults to commit at the next flush, after the frames nghttp2 has queued: raw frames
    /// must not land inside a callback's half-written output.
    private var faults: [(stream: Int32, fault: H2Fault)] = []
    private var receiving = false
    private var closed = false

    init(bev: OpaquePointer, upstream: ScriptedH2Upstream, number: Int, isTLS: Bool) throws {
        self.upstream = upstream
        self.number = number
        transport = Transport(bev: bev, delegate: self, directWrites: !isTLS)
        session = try H2Session(isServer: true, transport: transport, delegate: self)
        session.submitSettings(maxConcurrentStreams: 100)
        transport.enableReading()
    }

    func close() {
        guard !closed else { return }
        closed = true
        session.close()
        transport.close()
        upstream.closed(self)
    }

    // MARK: TransportDelegate

    func transportReadable(_ transport: Transport) {
        receiving = true
        defer { receiving = false }
        session.receiveInput()
        receiving = false
        flush()
    }

    func transportWritable(_ transport: Transport) { flush() }

    func transportEvent(_ transport: Transport, events: Int16) {
        if Int32(events) & BEV_EVENT_CONNECTED != 0 { return }
        close()
    }

    private func flush() {
        guard !closed else { return }
        session.flush()
        if !faults.isEmpty && !receiving { return commitFaults() }
        // A peer's GOAWAY with an error is not taken as a close: the sidecar must close the
        // connection itself, as a hostile upstream would leave it open.
        guard let end = session.end, transport.outputLength == 0 else { return }
        if case .peerError = end.cause { return }
        close()
    }

    private func commitFaults() {
        let due = faults
        faults.removeAll()
        for (stream, fault) in due {
            transport.write(fault.frames(stream: stream))
            switch fault.ending {
            case .keepOpen:
                break
            case .tlsAlertThenClose:
                // Under the TLS layer, straight to the socket.
                if let bev = transport.bev {
                    let fd = bufferevent_getfd(bev)
                    _ = H2Fault.fatalAlertRecord.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                }
                return close()
            case .reset:
                if let bev = transport.bev {
                    var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
                    setsockopt(bufferevent_getfd(bev), SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
                }
                return close()
            }
        }
    }

    // MARK: H2SessionDelegate

    func h2BeginHeaders(stream: Int32) {
        if requests[stream] == nil { requests[stream] = .init(connection: number, stream: stream, fields: [], body: []) }
    }

    func h2HeadersEnded(stream: Int32, fields: H2HeaderList, endStream: Bool) {
        fields.forEach { name, value in
            requests[stream]?.fields.append((name.string, value.string))
            return true
        }
        if endStream { requestEnded(stream) }
    }

    func h2Data(stream: Int32, bytes: UnsafeRawBufferPointer) {
        requests[stream]?.body.append(contentsOf: bytes)
        session.consume(stream: stream, count: bytes.count)
    }

    func h2DataEnded(stream: Int32) { requestEnded(stream) }

    func h2StreamClosed(stream: Int32, errorCode: UInt32) {
        if errorCode != 0, requests[stream] != nil { upstream.reset(.init(connection: number, stream: stream, errorCode: errorCode)) }
        requests.removeValue(forKey: stream)
        bodies.removeValue(forKey: stream)
        resetAfterFirstData.remove(stream)
    }

    func h2ReadBody(stream: Int32, into buffer: UnsafeMutableRawBufferPointer) -> H2BodyRead {
        guard var body = bodies[stream] else { return .bytes(0, end: true, trailers: false) }
        if resetAfterFirstData.contains(stream) {
            // After the head, as DATA comes only once it went; the reset leaves after this frame.
            guard body.sent == 0 else { return .deferred }
            body.sent = 1
            bodies[stream] = body
            buffer[0] = body.bytes[0]
            session.resetStream(stream, errorCode: 2) // INTERNAL_ERROR
            return .bytes(1, end: false, trailers: false)
        }
        let n = min(buffer.count, body.bytes.count - body.sent)
        body.bytes.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[body.sent..<(body.sent + n)])) }
        body.sent += n
        bodies[stream] = body
        let end = body.sent == body.bytes.count
        guard end, let trailers = body.trailers else { return .bytes(n, end: end, trailers: false) }
        session.submitTrailer(stream: stream, trailers)
        return .bytes(n, end: true, trailers: true)
    }

    func h2GoAway(lastStreamID: Int32, errorCode: UInt32) {}

    private func requestEnded(_ stream: Int32) {
        guard let request = requests[stream] else { return }
        switch upstream.answer(for: request) {
        case .answer(let status, let body):
            var head = H2HeaderList()
            head.append(name: ":status", value: String(status))
            head.append(name: "content-type", value: "application/json")
            head.append(name: "content-length", value: String(body.count))
            if !body.isEmpty { bodies[stream] = (body, 0, nil) }
            session.submitResponse(stream: stream, head, hasBody: !body.isEmpty)
        case .grpc(let message, let status):
            var trailers = H2HeaderList()
            trailers.append(name: "grpc-status", value: String(status))
            let framed = message.map { [0] + withUnsafeBytes(of: UInt32($0.count).bigEndian, Array.init) + $0 } ?? []
            bodies[stream] = (framed, 0, trailers)
            session.submitResponse(stream: stream, Self.grpcHead(status: 200), hasBody: true)
        case .grpcTrailersOnly(let status):
            var head = Self.grpcHead(status: 200)
            head.append(name: "grpc-status", value: String(status))
            session.submitResponse(stream: stream, head, hasBody: false)
        case .resetAfterHead(let status, let grpc):
            var head = grpc ? Self.grpcHead(status: status) : H2HeaderList()
            if !grpc {
                head.append(name: ":status", value: String(status))
                head.append(name: "content-type", value: "application/json")
            }
            bodies[stream] = (Array("{}".utf8), 0, nil)
            resetAfterFirstData.insert(stream)
            session.submitResponse(stream: stream, head, hasBody: true)
        case .hang:
            break
        case .refuse:
            session.resetStream(stream, errorCode: 7) // REFUSED_STREAM (RFC 9113 §7)
        case .reset:
            session.resetStream(stream, errorCode: 2) // INTERNAL_ERROR
        case .goAwayBefore:
            session.goAway(lastStreamID: max(0, stream - 2))
        case .fault(let fault):
            faults.append((stream, fault))
        }
        flush()
    }

    private static func grpcHead(status: Int) -> H2HeaderList {
        var head = H2HeaderList()
        head.append(name: ":status", value: String(status))
        head.append(name: "content-type", value: "application/grpc")
        return head
    }
}

/// A self-signed certificate for 127.0.0.1 (an EC key: quick to make) in `dir`: the upstream
/// serves it, and the sidecar trusts it as its own CA (`--upstream-ca-file`).
func selfSignedCertificate(in dir: URL) throws -> (cert: String, key: String) {
    let openssl = "/usr/bin/openssl"
    guard FileManager.default.isExecutableFile(atPath: openssl) else { throw SidecarError("openssl CLI missing") }
    let cert = dir.appendingPathComponent("cert.pem").path, key = dir.appendingPathComponent("key.pem").path
    let result = try runCommand(openssl, [
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key,
        "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
    ])
    if result.status != 0 { throw SidecarError("openssl failed: \(result.stderr)") }
    return (cert, key)
}
