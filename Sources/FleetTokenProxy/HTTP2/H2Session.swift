import CEvent
import CNghttp2

/// What an `H2Session` tells its owner. Every call comes from inside nghttp2 (while the
/// session is receiving or sending), so the owner may submit frames but must not flush.
protocol H2SessionDelegate: AnyObject {
    /// A header block begins: request headers (server), response headers or trailers (client).
    func h2BeginHeaders(stream: Int32)
    /// The header block is complete, with its `fields` in order; `endStream` says no DATA
    /// follows. Not called for a block that passed `maxHeaderListBytes` or `maxHeaderCount`
    /// (nghttp2 resets the stream instead). `fields` is the session's: copy what is kept, or
    /// keep it only until it is relayed with a `releasing:` submit.
    func h2HeadersEnded(stream: Int32, fields: H2HeaderList, endStream: Bool)
    /// A piece of a DATA frame. Flow-control credit is returned only by `consume`.
    func h2Data(stream: Int32, bytes: UnsafeRawBufferPointer)
    /// The peer ended its side of the stream with a DATA frame.
    func h2DataEnded(stream: Int32)
    /// The stream is closed; `errorCode` is 0 for a clean close.
    func h2StreamClosed(stream: Int32, errorCode: UInt32)
    /// nghttp2 wants body bytes for `stream`: copy at most `into.count` bytes.
    func h2ReadBody(stream: Int32, into buffer: UnsafeMutableRawBufferPointer) -> H2BodyRead
    /// The peer sent GOAWAY.
    func h2GoAway(lastStreamID: Int32, errorCode: UInt32)
    /// Our side of `stream` ended: a HEADERS or DATA frame with END_STREAM went out.
    func h2SentEndStream(stream: Int32)
    /// A HEADERS frame of `stream` went out (for a client: its request reached the socket).
    func h2SentHeaders(stream: Int32)
    /// The peer acknowledged a PING this side sent (`submitPing`).
    func h2PingAcked()
}

extension H2SessionDelegate {
    func h2SentEndStream(stream: Int32) {}
    func h2SentHeaders(stream: Int32) {}
    func h2PingAcked() {}
}

/// An answer to nghttp2's request for body bytes.
enum H2BodyRead {
    /// `count` bytes were copied; `end` ends the body, `trailers` says trailers follow (the
    /// delegate has already submitted them).
    case bytes(Int, end: Bool, trailers: Bool)
    /// Nothing to send yet; `resumeData` is called when there is.
    case deferred
}

/// One nghttp2 session (server or client side) on one `Transport`, with its C callbacks as
/// trampolines into the delegate. Frames go out only in `flush()`, never from inside a callback.
///
/// Connection errors: nghttp2 reports them three ways — `mem_recv` or `mem_send` failing
/// fatally, a GOAWAY with an error it queues itself (after which it wants neither to read
/// nor to write), and the peer's GOAWAY with an error. All three come to `end`, which the
/// owner asks after every `receiveInput` and `flush`, and which is its one way to learn that
/// the connection must go (RFC 9113 §5.4.1).
final class H2Session {
    private(set) var session: OpaquePointer?
    unowned(unsafe) let delegate: H2SessionDelegate
    private unowned(unsafe) let transport: Transport
    private var callbackDepth = 0
    private var flushPending = false
    /// Above this many bytes queued for the socket, frames wait in nghttp2 (backpressure).
    let outputHighWater: Int
    /// A header block whose fields (name + value + 32 bytes each, RFC 9113 §6.5.2) pass this is
    /// refused as it is decoded, before any field becomes a String: the stream is reset.
    let maxHeaderListBytes: Int
    /// A header block with more fields than this is refused the same way.
    let maxHeaderCount: Int
    /// The header block being received. One block at a time: a header block (HEADERS and its
    /// CONTINUATIONs) is contiguous on the connection (RFC 9113 §4.3), so its fields are
    /// gathered here and handed over once, when it ends.
    private var block = H2HeaderBlock()
    /// Frames serialized by one `flush()`, written to the socket together (one system call
    /// instead of one per frame).
    private let staging = EventBuffer()
    /// What `end` is made of: a fatal failure of `mem_recv` or `mem_send`, the GOAWAY with an
    /// error this side sent (and nghttp2's reason in it), the peer's GOAWAY with an error.
    private var fatalFailure: Int32?
    private var goAwaySent: (code: UInt32, reason: String?)?
    private var peerGoAwayError: UInt32?

    /// Creates a session; `isServer` picks the side, with the abuse limits of `H2Limits`.
    /// Automatic WINDOW_UPDATEs are off: credit is returned with `consume` once bytes have been
    /// passed on, so a slow peer slows the other.
    init(isServer: Bool, transport: Transport, delegate: H2SessionDelegate, outputHighWater: Int = 256 * 1024,
         maxHeaderListBytes: Int = 64 * 1024, maxHeaderCount: Int = 1000) throws(H2Error) {
        self.transport = transport
        self.delegate = delegate
        self.outputHighWater = outputHighWater
        self.maxHeaderListBytes = maxHeaderListBytes
        self.maxHeaderCount = maxHeaderCount
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        defer { nghttp2_session_callbacks_del(callbacks) }
        Self.install(callbacks!)
        var option: OpaquePointer?
        nghttp2_option_new(&option)
        defer { nghttp2_option_del(option) }
        nghttp2_option_set_no_auto_window_update(option, 1)
        H2Limits().apply(to: option!)
        // Unretained: the owner keeps this session alive until close(), which deletes it.
        let context = Unmanaged.passUnretained(self).toOpaque()
        var s: OpaquePointer?
        let rc = isServer
            ? nghttp2_session_server_new2(&s, callbacks, context, option)
            : nghttp2_session_client_new2(&s, callbacks, context, option)
        guard rc == 0, let s else { throw H2Error(code: rc, context: "session") }
        session = s
    }

    deinit {
        close()
    }

    /// Frees the session. Idempotent.
    func close() {
        guard let session else { return }
        self.session = nil
        nghttp2_session_del(session)
    }

    /// Sends our SETTINGS (the first frame either side must send), with the header list bound,
    /// and opens the connection-level receive window to `connectionWindowSize` (it starts at
    /// 65,535 whatever the streams' windows are).
    func submitSettings(maxConcurrentStreams: UInt32, initialWindowSize: UInt32 = 65_535, connectionWindowSize: Int32 = 65_535) {
        guard let session else { return }
        var entries = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: maxConcurrentStreams),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: initialWindowSize),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue), value: UInt32(maxHeaderListBytes)),
        ]
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entries, entries.count)
        if connectionWindowSize > 65_535 {
            nghttp2_session_set_local_window_size(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, connectionWindowSize)
        }
    }

    /// Feeds every byte in the transport's input to nghttp2. A connection error found in it
    /// shows in `end` (after the `flush()` that sends its GOAWAY).
    func receiveInput() {
        guard let session, fatalFailure == nil else { return }
        let input = transport.input
        var consumed = 0
        var failure: Int32?
        callbackDepth += 1
        forEachChain(of: input) { piece in
            let rc = nghttp2_session_mem_recv(session, piece.baseAddress!.assumingMemoryBound(to: UInt8.self), piece.count)
            if rc < 0 {
                failure = Int32(rc)
                return false
            }
            consumed += rc
            return true
        }
        callbackDepth -= 1
        transport.drainInput(consumed)
        if let failure { failed(failure) }
    }

    /// nghttp2 failed fatally: nothing more is read, and a GOAWAY (ENHANCE_YOUR_CALM for a
    /// flood, else INTERNAL_ERROR; nghttp2 queued PROTOCOL_ERROR itself for a bad preface) is
    /// queued for the flush that precedes the close.
    private func failed(_ code: Int32) {
        guard fatalFailure == nil, let session else { return }
        fatalFailure = code
        let error = code == NGHTTP2_ERR_FLOODED.rawValue ? NGHTTP2_ENHANCE_YOUR_CALM : NGHTTP2_INTERNAL_ERROR
        nghttp2_session_terminate_session(session, error.rawValue)
    }

    /// Why the session can carry nothing more, or nil while it goes on (see `H2SessionEnd`).
    /// A connection error this side found counts once its GOAWAY is out: until then nghttp2
    /// still wants to write.
    var end: H2SessionEnd? {
        guard let session else { return H2SessionEnd(cause: .finished) }
        if let fatalFailure { return H2SessionEnd(cause: .fatal(libraryCode: fatalFailure), reason: goAwaySent?.reason) }
        if let peerGoAwayError { return H2SessionEnd(cause: .peerError(code: peerGoAwayError)) }
        guard nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0 else { return nil }
        if let goAwaySent { return H2SessionEnd(cause: .localError(code: goAwaySent.code), reason: goAwaySent.reason) }
        return H2SessionEnd(cause: .finished)
    }

    /// Serializes queued frames into the transport, until nghttp2 has nothing more or the
    /// socket side is over its high-water mark. Deferred while inside a callback.
    func flush() {
        guard let session else { return }
        if callbackDepth > 0 { flushPending = true; return }
        flushPending = false
        // Frames are gathered up to the room left under the high-water mark and written in one
        // go. When the socket takes them all, nothing is queued and no write callback will come
        // to ask again, so the loop goes on until nghttp2 has nothing left or the socket is full.
        var drained = false
        while !drained, transport.isOpen, transport.outputLength < outputHighWater {
            let room = outputHighWater - transport.outputLength
            while staging.count < room {
                var data: UnsafePointer<UInt8>?
                let n = nghttp2_session_mem_send(session, &data)
                if n < 0 { fatalFailure = fatalFailure ?? Int32(n) }
                if n <= 0 { drained = true; break }
                staging.add(ByteView(start: data, count: n))
            }
            let staged = staging.count
            if staged == 0 { break }
            transport.moveIn(from: staging, count: staged)
        }
        // A closed transport takes nothing; nothing staged may linger into a later flush.
        staging.drain(staging.count)
    }

    /// True while nghttp2 has frames queued to send.
    var wantsWrite: Bool {
        guard let session else { return false }
        return nghttp2_session_want_write(session) != 0
    }

    // MARK: Submitting

    /// Opens a client stream; `hasBody` attaches a body read through `h2ReadBody`.
    func submitRequest(_ headers: H2HeaderList, hasBody: Bool) -> Int32 {
        guard let session else { return -1 }
        return headers.withNV { nva, count in
            if hasBody {
                var provider = Self.bodyProvider
                return nghttp2_submit_request(session, nil, nva, count, &provider, nil)
            }
            return nghttp2_submit_request(session, nil, nva, count, nil, nil)
        }
    }

    /// Submits a response head: the fields of `headers` that `leading` picks, then the others
    /// that `dropping` does not (by default all, in order).
    func submitResponse(stream: Int32, _ headers: H2HeaderList, hasBody: Bool,
                        leading: (ByteView) -> Bool = { _ in false },
                        dropping: (ByteView) -> Bool = { _ in false }) {
        guard let session else { return }
        _ = headers.withNV(leading: leading, dropping: dropping) { nva, count in
            if hasBody {
                var provider = Self.bodyProvider
                return nghttp2_submit_response(session, stream, nva, count, &provider)
            }
            return nghttp2_submit_response(session, stream, nva, count, nil)
        }
    }

    func submitTrailer(stream: Int32, _ headers: H2HeaderList) {
        guard let session else { return }
        _ = headers.withNV { nva, count in nghttp2_submit_trailer(session, stream, nva, count) }
    }

    /// `submitTrailer` for trailers another session handed over (`h2HeadersEnded`), which are
    /// let go of here: nghttp2 has copied their fields, and that session gathers its next
    /// header block in the same storage only once no other list shares it (see `H2HeaderBlock`).
    func submitTrailer(stream: Int32, releasing trailers: inout H2HeaderList?) {
        if let fields = trailers { submitTrailer(stream: stream, fields) }
        trailers = nil
    }

    func resetStream(_ stream: Int32, errorCode: UInt32) {
        guard let session else { return }
        nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream, errorCode)
    }

    /// A body that returned `.deferred` has bytes (or its end) now.
    func resumeData(stream: Int32) {
        guard let session else { return }
        nghttp2_session_resume_data(session, stream)
    }

    /// Gives the peer `count` bytes of flow-control credit back (stream and connection).
    func consume(stream: Int32, count: Int) {
        guard let session, count > 0 else { return }
        if nghttp2_session_consume(session, stream, count) != 0 {
            // The stream is gone; the connection window still needs its credit.
            nghttp2_session_consume_connection(session, count)
        }
    }

    /// Connection-level credit only: the bytes were taken off the connection (buffered for
    /// their stream, or discarded) but the stream's own window stays where it is.
    func consumeConnection(count: Int) {
        guard let session, count > 0 else { return }
        nghttp2_session_consume_connection(session, count)
    }

    /// Stream-level credit only (for bytes whose connection credit went back on arrival).
    func consumeStream(_ stream: Int32, count: Int) {
        guard let session, count > 0 else { return }
        nghttp2_session_consume_stream(session, stream, count)
    }

    /// The highest stream id the session has taken from the peer.
    var lastProcessedStreamID: Int32 {
        guard let session else { return 0 }
        return nghttp2_session_get_last_proc_stream_id(session)
    }

    /// Graceful GOAWAY (NO_ERROR) naming `lastStreamID`: streams up to it go on, the session
    /// keeps reading for them; nghttp2 ignores streams the peer opens past it.
    func goAway(lastStreamID: Int32) {
        guard let session else { return }
        nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), lastStreamID, UInt32(NGHTTP2_NO_ERROR.rawValue), nil, 0)
    }

    /// Queues a PING (nghttp2 answers the peer's own PINGs by itself).
    func submitPing() {
        guard let session else { return }
        nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
    }

    /// The peer's SETTINGS_MAX_CONCURRENT_STREAMS.
    var remoteMaxConcurrentStreams: Int {
        guard let session else { return 0 }
        return Int(nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS))
    }

    // MARK: Callbacks

    private static func from(_ userData: UnsafeMutableRawPointer?) -> H2Session {
        Unmanaged<H2Session>.fromOpaque(userData!).takeUnretainedValue()
    }

    private static let bodyProvider = nghttp2_data_provider(
        source: nghttp2_data_source(ptr: nil),
        read_callback: { _, stream, buffer, length, flags, _, userData in
            let me = H2Session.from(userData)
            switch me.delegate.h2ReadBody(stream: stream, into: UnsafeMutableRawBufferPointer(start: buffer, count: length)) {
            case .deferred:
                return ssize_t(NGHTTP2_ERR_DEFERRED.rawValue)
            case .bytes(let n, let end, let trailers):
                if end { flags!.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue) }
                if end && trailers { flags!.pointee |= UInt32(NGHTTP2_DATA_FLAG_NO_END_STREAM.rawValue) }
                return ssize_t(n)
            }
        })

    private static func install(_ callbacks: OpaquePointer) {
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, userData in
            let me = H2Session.from(userData)
            me.block.begin()
            me.delegate.h2BeginHeaders(stream: frame!.pointee.hd.stream_id)
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, userData in
            let me = H2Session.from(userData)
            // Past a bound nghttp2 resets the stream and decodes the rest of the block without
            // calling back (HPACK stays in sync).
            let taken = me.block.take(name: ByteView(start: name, count: nameLength),
                                      value: ByteView(start: value, count: valueLength),
                                      maxBytes: me.maxHeaderListBytes, maxCount: me.maxHeaderCount)
            return taken ? 0 : Int32(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, userData in
            let me = H2Session.from(userData)
            let hd = frame!.pointee.hd
            let endStream = hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
            switch UInt32(hd.type) {
            case NGHTTP2_HEADERS.rawValue:
                me.delegate.h2HeadersEnded(stream: hd.stream_id, fields: me.block.fields, endStream: endStream)
            case NGHTTP2_DATA.rawValue:
                if endStream { me.delegate.h2DataEnded(stream: hd.stream_id) }
            case NGHTTP2_GOAWAY.rawValue:
                let goaway = frame!.pointee.goaway
                if goaway.error_code != NGHTTP2_NO_ERROR.rawValue && me.peerGoAwayError == nil { me.peerGoAwayError = goaway.error_code }
                me.delegate.h2GoAway(lastStreamID: goaway.last_stream_id, errorCode: goaway.error_code)
            case NGHTTP2_PING.rawValue where hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0:
                me.delegate.h2PingAcked()
            default:
                break
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { _, frame, userData in
            let me = H2Session.from(userData)
            let hd = frame!.pointee.hd
            let type = UInt32(hd.type)
            if type == NGHTTP2_HEADERS.rawValue { me.delegate.h2SentHeaders(stream: hd.stream_id) }
            if (type == NGHTTP2_HEADERS.rawValue || type == NGHTTP2_DATA.rawValue) && hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0 {
                me.delegate.h2SentEndStream(stream: hd.stream_id)
            }
            if type == NGHTTP2_GOAWAY.rawValue && frame!.pointee.goaway.error_code != NGHTTP2_NO_ERROR.rawValue && me.goAwaySent == nil {
                let goaway = frame!.pointee.goaway
                me.goAwaySent = (goaway.error_code, H2Session.reason(goaway.opaque_data, count: goaway.opaque_data_len))
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, stream, data, length, userData in
            let me = H2Session.from(userData)
            me.delegate.h2Data(stream: stream, bytes: UnsafeRawBufferPointer(start: data, count: length))
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, stream, errorCode, userData in
            let me = H2Session.from(userData)
            me.delegate.h2StreamClosed(stream: stream, errorCode: errorCode)
            return 0
        }
    }
}

extension H2Session {
    /// The debug data of a GOAWAY this side sent, for the log: nghttp2's own fixed text for the
    /// error (never a header field), kept to printable ASCII and 96 bytes.
    fileprivate static func reason(_ data: UnsafeMutablePointer<UInt8>?, count: Int) -> String? {
        guard let data, count > 0 else { return nil }
        let bytes = UnsafeBufferPointer(start: data, count: min(count, 96))
        return String(decoding: bytes.map { (0x20...0x7e).contains($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
    }
}

/// An nghttp2 failure, with nghttp2's own text.
struct H2Error: Error, CustomStringConvertible {
    let code: Int32
    let context: String
    var description: String { "HTTP/2 \(context): " + String(cString: nghttp2_strerror(code)) }
}
