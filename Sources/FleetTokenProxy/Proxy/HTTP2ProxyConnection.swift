import CEvent
import CNghttp2
import Logging

/// One client connection speaking HTTP/2 (h2c with prior knowledge, as a gRPC client's
/// insecure channel does) to the sidecar.
///
/// Each stream is an `H2Call`: its entity is worked out from the gRPC method and first request
/// message (or the REST path), its token attached, and it is forwarded on a stream of a shared
/// upstream HTTP/2 connection. DATA and trailers are relayed as they come, with flow-control
/// credit returned only once bytes have been passed on. Owned by the `ProxyServer`;
/// `close(reason:)` is its one way out.
final class HTTP2ProxyConnection: ClientConnection, TransportDelegate, H2SessionDelegate {
    private var transport: Transport
    private var session: H2Session!
    private let core: ProxyCore
    private unowned let server: ProxyServer
    private var calls: [Int32: H2Call] = [:]
    private var logger: Logger
    private var closed = false
    private var draining = false
    private var flushScheduled = false
    let id: Int

    /// Most streams a client may have open at once on this connection.
    static let maxConcurrentStreams: UInt32 = 256
    /// A stream whose headers pass this many bytes is reset (bounded memory).
    static let maxHeaderBytes = 32 * 1024

    /// Takes over `transport` from the HTTP/1.1 connection that saw the HTTP/2 preface.
    init(transport: Transport, core: ProxyCore, server: ProxyServer, id: Int) throws {
        self.transport = transport
        self.core = core
        self.server = server
        self.id = id
        var logger = core.logger
        logger[metadataKey: "conn"] = "\(id)"
        logger[metadataKey: "protocol"] = "h2"
        self.logger = logger
        transport.delegate = self
        session = try H2Session(isServer: true, transport: transport, delegate: self)
        session.submitSettings(maxConcurrentStreams: Self.maxConcurrentStreams)
        transportReadable(transport)
    }

    func close(reason: String) {
        guard !closed else { return }
        closed = true
        for call in calls.values { abandon(call) }
        calls.removeAll()
        logger.trace("connection closed", metadata: ["reason": "\(reason)"])
        session.close()
        transport.close()
        server.connectionClosed(self)
    }

    /// Stops taking new streams (GOAWAY); closes once the calls in flight are done.
    func drain() {
        draining = true
        session.goAway()
        flush()
        if calls.isEmpty { close(reason: "draining") }
    }

    // MARK: TransportDelegate

    func transportReadable(_ transport: Transport) {
        do {
            try session.receiveInput()
        } catch {
            logger.debug("HTTP/2 protocol error from client", metadata: ["error": "\(error)"])
            session.flush() // the GOAWAY nghttp2 queued
            close(reason: "\(error)")
            return
        }
        flush()
    }

    func transportWritable(_ transport: Transport) { flush() }

    func transportEvent(_ transport: Transport, events: Int16) {
        let e = Int32(events)
        if e & BEV_EVENT_TIMEOUT != 0 && e & BEV_EVENT_READING != 0 && !calls.isEmpty {
            // Quiet because its calls wait on the upstream, which has its own bounds.
            transport.enableReading()
            return
        }
        close(reason: transport.describe(events: e))
    }

    /// Writes what nghttp2 has queued; closes when neither side has anything left to say.
    func flush() {
        guard !closed else { return }
        session.flush()
        if !session.isAlive && transport.outputLength == 0 { close(reason: "session ended") }
    }

    /// Flushes after the current callbacks (from the other connection's callbacks).
    func flushSoon() {
        guard !flushScheduled, !closed else { return }
        flushScheduled = true
        core.loop.schedule(after: 0) { [weak self] in
            guard let self else { return }
            flushScheduled = false
            flush()
        }
    }

    // MARK: H2SessionDelegate — the client's side

    func h2BeginHeaders(stream: Int32) {
        guard calls[stream] == nil else { return } // trailers on a request: nothing to route
        core.statistics.calls += 1
        let call = H2Call(clientStream: stream, client: self)
        call.started = core.clock.monotonicNow
        calls[stream] = call
    }

    func h2Header(stream: Int32, name: String, value: String) {
        guard let call = calls[stream], !call.routed else { return }
        call.headerBytes += name.utf8.count + value.utf8.count + 32
        if call.headerBytes > Self.maxHeaderBytes {
            fail(call, .requestTooLarge("request headers are over \(Self.maxHeaderBytes) bytes"))
            return
        }
        switch name {
        case ":method": call.method = value
        case ":path": call.path = value
        case ":authority", ":scheme": break // set again for the upstream
        case "content-type": call.contentType = value; call.headers.append((name, value))
        case "grpc-encoding": call.grpcEncoding = value; call.headers.append((name, value))
        case "grpc-timeout": call.grpcTimeout = H2Call.grpcTimeout(value); call.headers.append((name, value))
        default:
            if !name.hasPrefix(":") && !HopByHop.dropFromH2Request(name) { call.headers.append((name, value)) }
        }
    }

    func h2HeadersEnded(stream: Int32, endStream: Bool) {
        guard let call = calls[stream], !call.finished else { return }
        if endStream { call.requestEnded = true }
        guard call.key == nil, !call.routed else { return }
        if let timeout = call.grpcTimeout {
            call.deadline = core.loop.schedule(after: timeout) { [weak self, weak call] in
                guard let self, let call, !call.responseSubmitted, !call.finished else { return }
                self.fail(call, grpcStatus: 4, message: "deadline exceeded while the sidecar waited for the entity's token")
            }
        }
        if call.isGRPC {
            guard let rule = GRPCRoute.rule(forPath: call.path) else {
                fail(call, .notFleetEngineCall("\(call.path.prefix(96)) is not a Fleet Engine gRPC method"))
                return
            }
            call.rule = rule
            routeGRPC(call)
        } else {
            switch RESTRoute.classify(method: call.method, target: call.path) {
            case .failure(let failure): fail(call, failure)
            case .success(let key): routed(call, key: key)
            }
        }
    }

    func h2Data(stream: Int32, bytes: UnsafeRawBufferPointer) {
        guard let call = calls[stream], !call.finished else {
            session.consume(stream: stream, count: bytes.count)
            return
        }
        evbuffer_add(call.requestBody, bytes.baseAddress, bytes.count)
        if !call.routed {
            // Until the call is routed its first message is read here, so the window must
            // open for it; the bound is the largest first message (GRPCMessageFrame).
            session.consume(stream: stream, count: bytes.count)
            if call.key == nil && call.isGRPC { routeGRPC(call) }
        } else if call.upstreamDeferred, let upstream = call.upstream {
            upstream.resume(call)
        }
    }

    func h2DataEnded(stream: Int32) {
        guard let call = calls[stream], !call.finished else { return }
        call.requestEnded = true
        if !call.routed && call.key == nil && call.isGRPC { routeGRPC(call) }
        if call.routed, call.upstreamDeferred, let upstream = call.upstream { upstream.resume(call) }
    }

    func h2StreamClosed(stream: Int32, errorCode: UInt32) {
        guard let call = calls.removeValue(forKey: stream) else { return }
        if !call.responseEnded || errorCode != 0 { abandon(call) }
        call.finished = true
        call.deadline?.cancel()
        logCall(call)
        if draining && calls.isEmpty { flushSoon() }
    }

    func h2ReadBody(stream: Int32, into buffer: UnsafeMutableRawBufferPointer) -> H2BodyRead {
        guard let call = calls[stream] else { return .bytes(0, end: true, trailers: false) }
        let n = Int(evbuffer_remove(call.responseBody, buffer.baseAddress, buffer.count))
        if n > 0, let upstream = call.creditTo { upstream.consume(call, count: n) }
        if evbuffer_get_length(call.responseBody) == 0 && call.responseEnded {
            if let trailers = call.responseTrailers {
                session.submitTrailer(stream: stream, trailers)
                return .bytes(max(n, 0), end: true, trailers: true)
            }
            return .bytes(max(n, 0), end: true, trailers: false)
        }
        if n <= 0 {
            call.clientDeferred = true
            return .deferred
        }
        return .bytes(n, end: false, trailers: false)
    }

    func h2GoAway(lastStreamID: Int32, errorCode: UInt32) {
        draining = true
    }

    // MARK: Routing

    /// Reads the first gRPC message once it is complete, and works out the entity.
    private func routeGRPC(_ call: H2Call) {
        guard let rule = call.rule else { return }
        let length = evbuffer_get_length(call.requestBody)
        guard length > 0, let base = evbuffer_pullup(call.requestBody, length) else {
            if call.requestEnded { fail(call, .invalidEntity("the call has no request message")) }
            return
        }
        let received = UnsafeRawBufferPointer(start: base, count: length)
        switch GRPCMessageFrame.firstMessage(in: received) {
        case .needMore:
            if call.requestEnded { fail(call, .invalidEntity("the request message is cut short")) }
        case .invalid(let failure):
            fail(call, failure)
        case .complete(let compressed, let payload):
            let message = UnsafeRawBufferPointer(rebasing: received[payload])
            let result: Result<EntityKey, ProxyFailure>
            if compressed {
                guard call.grpcEncoding == "gzip" else {
                    fail(call, grpcStatus: 12, message: "grpc-encoding \(call.grpcEncoding ?? "(none)") is not supported by the sidecar; use gzip or identity")
                    return
                }
                switch GzipInflate.inflate(message) {
                case .failure(let failure): result = .failure(failure)
                case .success(let inflated): result = inflated.withUnsafeBytes { GRPCRoute.classify(rule: rule, message: $0) }
                }
            } else {
                result = GRPCRoute.classify(rule: rule, message: message)
            }
            switch result {
            case .failure(let failure): fail(call, failure)
            case .success(let key): routed(call, key: key)
            }
        }
    }

    /// The entity is known: get its token, then forward.
    private func routed(_ call: H2Call, key: EntityKey) {
        call.key = key
        core.cache.token(for: key) { [weak self, weak call] result in
            guard let self, let call, !call.finished, !call.responseSubmitted else { return }
            switch result {
            case .failure(let failure):
                self.fail(call, failure)
            case .success(let token):
                call.token = token
                call.routed = true
                call.deadline?.cancel()
                call.deadline = nil
                self.core.statistics.forwarded += 1
                self.core.upstreamH2.start(call)
            }
            self.flushSoon()
        }
    }

    // MARK: Answers from the upstream (called by UpstreamH2Connection)

    /// The upstream's response head arrived: pass it on (a trailers-only answer ends here).
    func upstreamResponseHead(_ call: H2Call, endStream: Bool) {
        guard !call.finished, !call.responseSubmitted else { return }
        call.responseSubmitted = true
        var headers: [(String, String)] = []
        headers.reserveCapacity(call.responseHeaders.count)
        for (name, value) in call.responseHeaders where !HopByHop.dropFromH2Response(name) {
            if name == ":status" { call.status = Int(value) ?? 0; headers.insert((name, value), at: 0) } else { headers.append((name, value)) }
        }
        core.statistics.upstreamStatus[call.status, default: 0] += 1
        session.submitResponse(stream: call.clientStream, headers, hasBody: !endStream)
        flushSoon()
    }

    /// More response body or the end is available for a stream that was waiting.
    func upstreamResponseProgress(_ call: H2Call) {
        guard !call.finished, call.responseSubmitted else { return }
        if call.clientDeferred {
            call.clientDeferred = false
            session.resumeData(stream: call.clientStream)
        }
        flushSoon()
    }

    /// Gives the client credit for request bytes the upstream took.
    func requestBytesForwarded(_ call: H2Call, count: Int) {
        session.consume(stream: call.clientStream, count: count)
        flushSoon()
    }

    /// The upstream stream broke. Before any answer: an error the client's library
    /// understands; after: the stream is reset with the upstream's code.
    func upstreamFailed(_ call: H2Call, failure: ProxyFailure, errorCode: UInt32) {
        guard !call.finished else { return }
        if call.responseSubmitted {
            session.resetStream(call.clientStream, errorCode: errorCode == 0 ? UInt32(NGHTTP2_INTERNAL_ERROR.rawValue) : errorCode)
            call.finished = true
            flushSoon()
        } else {
            fail(call, failure)
        }
    }

    /// Fleet Engine refused the call's token: drop it from the cache and forward the call once
    /// more with a fresh one.
    func retryWithFreshToken(_ call: H2Call) {
        guard !call.finished, let key = call.key else { return }
        if let old = call.token { core.cache.invalidate(key, token: old) }
        call.token = nil
        call.routed = false
        routed(call, key: key)
    }

    // MARK: Answers from the sidecar itself

    private func fail(_ call: H2Call, _ failure: ProxyFailure) {
        if call.isGRPC {
            fail(call, grpcStatus: failure.grpcStatus, message: failure.message, httpStatus: nil)
        } else {
            guard !call.responseSubmitted, !call.finished else { return }
            call.responseSubmitted = true
            call.status = failure.httpStatus
            core.statistics.refusedByStatus[failure.httpStatus, default: 0] += 1
            let body = ErrorResponse.jsonBody(failure)
            evbuffer_add(call.responseBody, body, body.count)
            call.responseEnded = true
            detachUpstream(call)
            session.submitResponse(stream: call.clientStream, [
                (":status", "\(failure.httpStatus)"), ("content-type", "application/json; charset=UTF-8"),
                ("content-length", "\(body.count)"),
            ], hasBody: true)
            flushSoon()
        }
    }

    /// A trailers-only gRPC answer (HEADERS with END_STREAM) carrying `grpcStatus`.
    private func fail(_ call: H2Call, grpcStatus: Int, message: String, httpStatus: Int? = nil) {
        guard !call.responseSubmitted, !call.finished else { return }
        call.responseSubmitted = true
        call.responseEnded = true
        call.status = 200
        core.statistics.refusedByGRPCStatus[grpcStatus, default: 0] += 1
        detachUpstream(call)
        logger.debug("refused", metadata: ["stream": "\(call.clientStream)", "grpc_status": "\(grpcStatus)", "reason": "\(message)"])
        session.submitResponse(stream: call.clientStream, [
            (":status", "200"), ("content-type", "application/grpc"),
            ("grpc-status", "\(grpcStatus)"), ("grpc-message", GRPCMessage.percentEncoded(message)),
        ], hasBody: false)
        flushSoon()
    }

    /// The call will not be forwarded any more: cancel its upstream stream if it has one.
    private func detachUpstream(_ call: H2Call) {
        call.deadline?.cancel()
        call.deadline = nil
        if let upstream = call.upstream { upstream.cancel(call) }
    }

    /// The client went away or reset the stream: stop the upstream side too.
    private func abandon(_ call: H2Call) {
        call.finished = true
        call.deadline?.cancel()
        if let upstream = call.upstream { upstream.cancel(call) }
    }

    private func logCall(_ call: H2Call) {
        let seconds = core.clock.monotonicNow - call.started
        core.metrics.callFinished(protocol: call.isGRPC ? "grpc" : "h2", code: call.status, seconds: seconds)
        core.accessLogger?.info("call", metadata: [
            "method": "\(call.method)", "route": "\(call.path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0].prefix(128))",
            "entity_type": "\(call.key?.type.rawValue ?? "-")", "status": "\(call.status)", "ms": "\(Int(seconds * 1000))",
        ])
        guard logger.logLevel <= .debug else { return }
        let ms = seconds * 1000
        logger.debug("call", metadata: [
            "stream": "\(call.clientStream)", "path": "\(call.path.prefix(96))",
            "entity_type": "\(call.key?.type.rawValue ?? "-")", "status": "\(call.status)", "ms": "\(Int(ms))",
        ])
    }
}

/// gRPC's `grpc-message` value: percent-encoded UTF-8 (gRPC over HTTP/2 spec).
enum GRPCMessage {
    static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            if byte >= 0x20 && byte <= 0x7E && byte != 0x25 {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                out += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return out
    }
}
