import CEvent
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// A small HTTP/1.1 server that reads whole requests and hands them to an `HTTPHandler`.
///
/// It hosts the loopback stand-ins (token provider, Fleet Engine) of the demo, the tests and
/// the benchmark, over plain TCP or TLS. It is not on the proxy's path.
package final class BufferedHTTPServer {
    private let loop: EventLoop
    private let tls: TLSContext?
    let handler: HTTPHandler
    let maxBodyBytes: Int
    private var listener: Listener?
    private var connections: [ObjectIdentifier: BufferedServerConnection] = [:]

    package init(loop: EventLoop, tls: TLSContext? = nil, maxBodyBytes: Int = 8 * 1024 * 1024, handler: @escaping HTTPHandler) {
        self.loop = loop
        self.tls = tls
        self.maxBodyBytes = maxBodyBytes
        self.handler = handler
    }

    /// Binds and starts accepting; returns the bound address (real port for port 0).
    @discardableResult
    package func listen(on address: ListenAddress) throws -> String {
        let listener = try Listener(loop: loop, address: address) { [unowned self] fd in accept(fd) }
        self.listener = listener
        return listener.boundDescription
    }

    /// Stops accepting and closes every connection.
    package func close() {
        listener?.close()
        listener = nil
        for c in Array(connections.values) { c.close() }
    }

    private func accept(_ fd: Int32) {
        guard let bev = Self.bufferevent(accepted: fd, loop: loop, tls: tls) else { return }
        let connection = BufferedServerConnection(bev: bev, server: self, isTLS: tls != nil)
        connections[ObjectIdentifier(connection)] = connection
    }

    /// A bufferevent for an accepted socket (TCP_NODELAY, non-blocking), accepting TLS when
    /// `tls` is given; nil (the socket closed) when it cannot be made.
    static func bufferevent(accepted fd: Int32, loop: EventLoop, tls: TLSContext?) -> OpaquePointer? {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        _ = evutil_make_socket_nonblocking(fd)
        let options = Int32(BEV_OPT_CLOSE_ON_FREE.rawValue)
        var bev: OpaquePointer?
        if let tls, let ssl = try? tls.makeServerSSL() {
            bev = bufferevent_openssl_socket_new(loop.base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING, options)
        } else if tls == nil {
            bev = bufferevent_socket_new(loop.base, fd, options)
        }
        if bev == nil { Glibc.close(fd) }
        return bev
    }

    func closed(_ connection: BufferedServerConnection) {
        connections.removeValue(forKey: ObjectIdentifier(connection))
    }
}

/// One connection of a `BufferedHTTPServer`: one request at a time, keep-alive.
final class BufferedServerConnection: TransportDelegate {
    private var transport: Transport!
    private unowned let server: BufferedHTTPServer
    private var head: RequestHead?
    private var body: [UInt8] = []
    private var chunked: ChunkedBodyScanner?
    private var remaining = 0
    private var busy = false

    init(bev: OpaquePointer, server: BufferedHTTPServer, isTLS: Bool) {
        self.server = server
        transport = Transport(bev: bev, delegate: self, directWrites: !isTLS)
        transport.setTimeouts(read: 120, write: 60)
        transport.enableReading()
    }

    func close() {
        guard transport.isOpen else { return }
        transport.close()
        server.closed(self)
    }

    func transportReadable(_ transport: Transport) {
        while transport.isOpen && !busy {
            if head == nil {
                let available = transport.inputLength
                guard available > 0 else { return }
                switch transport.withInput(upTo: 64 * 1024, {
                    HTTP1Parser.parseRequest($0.raw, maxHeadBytes: 64 * 1024, maxHeaderCount: 200)
                }) {
                case .incomplete: return
                case .invalid(let failure):
                    respond(HTTPResponse.json(failure.httpStatus, String(decoding: ErrorResponse.jsonBody(failure), as: UTF8.self)), keepAlive: false)
                    return
                case .complete(let h, let length):
                    transport.drainInput(length)
                    head = h
                    body = []
                    chunked = nil
                    remaining = 0
                    switch h.framing {
                    case .contentLength(let n) where n > server.maxBodyBytes:
                        respond(.json(413, #"{"error":{"code":413,"message":"body too large","status":"RESOURCE_EXHAUSTED"}}"#), keepAlive: false)
                        return
                    case .contentLength(let n): remaining = n
                    case .chunked: chunked = ChunkedBodyScanner()
                    default: break
                    }
                    if h.expectsContinue { transport.write("HTTP/1.1 100 Continue\r\n\r\n") }
                }
            }
            guard readBody() else { return }
            dispatch()
        }
    }

    /// Collects body bytes; true when the body is complete.
    private func readBody() -> Bool {
        if var scanner = chunked {
            var consumed = 0
            var finished = false
            var bad = false
            forEachChain(of: transport.input) { piece in
                switch scanner.scan(piece, onData: { body.append(contentsOf: $0) }) {
                case .failure: bad = true; return false
                case .success(let r):
                    consumed += r.consumed
                    finished = r.finished
                    return !r.finished && r.consumed == piece.count
                }
            }
            transport.drainInput(consumed)
            chunked = scanner
            if bad || body.count > server.maxBodyBytes {
                respond(.json(400, #"{"error":{"code":400,"message":"bad chunked body","status":"INVALID_ARGUMENT"}}"#), keepAlive: false)
                return false
            }
            return finished
        }
        let take = min(remaining, transport.inputLength)
        if take > 0 {
            let start = body.count
            body.append(contentsOf: repeatElement(0, count: take))
            body.withUnsafeMutableBytes { _ = transport.removeInput(into: UnsafeMutableRawBufferPointer(rebasing: $0[start...])) }
            remaining -= take
        }
        return remaining == 0
    }

    private func dispatch() {
        guard let head else { return }
        self.head = nil
        busy = true
        transport.disableReading()
        var request = HTTPRequest(method: head.method, target: head.target, headers: head.headers, body: body)
        request.clientCertificate = transport.peerCertificate
        let keepAlive = head.keepAlive
        var answered = false
        server.handler(request) { [weak self] response in
            guard let self, !answered else { return }
            answered = true
            self.respond(response, keepAlive: keepAlive, method: head.method)
        }
    }

    private func respond(_ response: HTTPResponse, keepAlive: Bool, method: String = "GET") {
        guard transport.isOpen else { return }
        var out = "HTTP/1.1 \(response.status) \(HTTPStatus.reasonPhrase(response.status))\r\n"
        for h in response.headers where !h.name.asciiCaseInsensitiveEquals("content-length") && !h.name.asciiCaseInsensitiveEquals("connection") {
            out += "\(h.name): \(h.value)\r\n"
        }
        out += "Content-Length: \(response.body.count)\r\n"
        if !keepAlive { out += "Connection: close\r\n" }
        out += "\r\n"
        transport.write(out)
        if method != "HEAD" { transport.write(response.body) }
        busy = false
        if keepAlive {
            transport.enableReading()
            if transport.inputLength > 0 { transportReadable(transport) }
        } else {
            closeAfterFlush = true
            transport.disableReading()
            if transport.outputLength == 0 { close() }
        }
    }

    private var closeAfterFlush = false

    func transportWritable(_ transport: Transport) {
        if closeAfterFlush && transport.outputLength == 0 { close() }
    }

    func transportEvent(_ transport: Transport, events: Int16) {
        // A TLS server bufferevent reports the finished handshake as "connected".
        if Int32(events) & BEV_EVENT_CONNECTED != 0 { return }
        close()
    }
}
