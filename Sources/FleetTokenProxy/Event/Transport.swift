import CEvent
import COpenSSL
import CShims
#if canImport(Glibc)
import Glibc
#endif

/// What a connection object hears from its `Transport`.
protocol TransportDelegate: AnyObject {
    /// New bytes are in `transport.input`.
    func transportReadable(_ transport: Transport)
    /// `transport.output` drained to its low-water mark (zero unless set).
    func transportWritable(_ transport: Transport)
    /// A `BEV_EVENT_*` set: connected, EOF, error or timeout.
    func transportEvent(_ transport: Transport, events: Int16)
}

/// One bufferevent (plain TCP, Unix or TLS), with its C callbacks as thin trampolines into the
/// delegate. The owner calls `close()` exactly where it closes; that frees the bufferevent and
/// with it the socket (and the SSL object), after which no callback can arrive.
///
/// Invariant: `bev` is live until `close()` sets it to nil, and every libevent call on it
/// checks that first; the C callbacks carry an unretained pointer to this object, valid
/// because `close()` (at the latest in `deinit`) frees the bufferevent before the object
/// goes; a view of the input (`withInput`) lives only for its closure.
///
/// On a plain socket the owner may switch reading to `DirectReads` (`readDirectly()`): the
/// bufferevent asks the kernel how many bytes are waiting (`FIONREAD`) before every read, one
/// system call per read that this path does without; the delegate sees the same callbacks.
///
/// Writes go straight to the socket (plain) or through `SSL_write` (TLS, once the handshake is
/// done) while nothing is queued, and only what the socket does not take is queued in the
/// bufferevent. A queued TLS write costs an `epoll_ctl` to watch for writability, a loop turn
/// and an `epoll_ctl` to stop watching: three system calls of the eight a REST call over a TLS
/// upstream made. After an `SSL_write` that could not finish, the bytes it was given are queued
/// as they were: OpenSSL requires the retry (bufferevent_openssl's, from `output`) to offer at
/// least those bytes again, and the empty output's first chain is exactly them.
final class Transport {
    private(set) var bev: OpaquePointer?
    /// Unowned: the delegate owns this transport and outlives it while it is open.
    unowned(unsafe) var delegate: TransportDelegate

    /// True for a plain socket (not TLS): writes may then go straight to the socket.
    private let directWrites: Bool
    /// The TLS connection of a TLS bufferevent (owned by it), nil for a plain socket.
    private let ssl: OpaquePointer?
    /// The TLS handshake finished (`BEV_EVENT_CONNECTED` came): `SSL_write` may be called
    /// directly from then on.
    private var tlsEstablished = false
    /// Set once reads bypass the bufferevent (plain sockets only).
    private var directReads: DirectReads?
    /// OpenSSL reads ahead on this TLS connection (`readAhead()`): records it has taken from the
    /// socket but bufferevent_openssl did not ask for are decrypted at each read callback.
    private var readsAhead = false
    /// Most bytes `takeBufferedRecords` decrypts in one read callback: a peer that keeps the
    /// socket full must not grow `input` without end before the delegate reads it.
    var readAheadTakeLimit = 64 * 1024

    /// `directWrites` must be false for TLS bufferevents, whose bytes must pass through SSL.
    init(bev: OpaquePointer, delegate: TransportDelegate, directWrites: Bool = false) {
        self.bev = bev
        self.delegate = delegate
        self.directWrites = directWrites
        ssl = directWrites ? nil : bufferevent_openssl_get_ssl(bev)
        // Unretained context: the delegate keeps this object alive until close() frees `bev`.
        let context = Unmanaged.passUnretained(self).toOpaque()
        bufferevent_setcb(bev, { _, arg in
            Transport.deliver(arg) { transport, delegate in
                let more = transport.readsAhead && transport.takeBufferedRecords()
                delegate.transportReadable(transport)
                if more { transport.deliverHeldRecordsLater() }
            }
        }, { _, arg in
            Transport.deliver(arg) { $1.transportWritable($0) }
        }, { _, events, arg in
            Transport.deliver(arg) { transport, delegate in
                if Int32(events) & BEV_EVENT_CONNECTED != 0 { transport.tlsEstablished = transport.ssl != nil }
                delegate.transportEvent(transport, events: events)
            }
        }, context)
    }

    deinit { close() }

    /// Calls into the delegate from a C callback with both objects held strongly: the
    /// delegate may close and drop its last reference while it runs.
    private static func deliver(_ arg: UnsafeMutableRawPointer?, _ body: (Transport, TransportDelegate) -> Void) {
        deliverNow(Unmanaged<Transport>.fromOpaque(arg!).takeUnretainedValue(), body)
    }

    private static func deliverNow(_ transport: Transport, _ body: (Transport, TransportDelegate) -> Void) {
        let delegate: TransportDelegate = transport.delegate
        withExtendedLifetime(transport) {
            withExtendedLifetime(delegate) { body(transport, delegate) }
        }
    }

    var isOpen: Bool { bev != nil }

    /// The certificate the peer presented in the TLS handshake, as DER; nil over plain TCP.
    var peerCertificate: [UInt8]? { ssl.flatMap(X509DER.peer(of:)) }

    /// From now on reads go straight from the socket into `input` (see `DirectReads`), with
    /// the same read callbacks, timeout, high-water mark and EOF and error events. Plain
    /// sockets only, once connected; call once, before the first read is wanted or at once
    /// after the connection event (the bufferevent's own reading is turned off here).
    func readDirectly() {
        guard directWrites, directReads == nil, let bev else { return }
        let fd = bufferevent_getfd(bev)
        guard fd >= 0 else { return }
        let wasReading = Int32(bufferevent_get_enabled(bev)) & EV_READ != 0
        if wasReading { bufferevent_disable(bev, Int16(EV_READ)) }
        directReads = DirectReads(transport: self, base: bufferevent_get_base(bev), fd: fd, input: bufferevent_get_input(bev))
        if wasReading { directReads?.enable() }
    }

    /// For the one busy, long-lived TLS connection of an HTTP/2 upstream: OpenSSL reads all the
    /// socket has at once instead of a record's header and then its body (two system calls a
    /// record, and a record is often one answer), and keeps its 17 KB record buffers instead of
    /// freeing them after each record (`SSL_MODE_RELEASE_BUFFERS`, right for the many idle
    /// connections of an HTTP/1.1 pool; here a malloc and a free a record). TLS only, once
    /// connected.
    func readAhead() {
        guard let ssl, !readsAhead else { return }
        fte_ssl_keep_buffers_read_ahead(ssl)
        readsAhead = true
    }

    /// Decrypts into `input` the records OpenSSL read ahead but bufferevent_openssl left: it
    /// stops once the record it asked for is used up (`SSL_pending`), and the socket they came
    /// from is no longer readable, so without this they would wait for the peer's next bytes.
    /// At most `readAheadTakeLimit` bytes a callback; true when it stopped there with records
    /// possibly left, which `deliverHeldRecordsLater` then hands over in a later turn. A record
    /// not yet whole (`SSL_read` wants to read) waits for the rest, which makes the socket
    /// readable again; an error or the peer's close_notify is left for bufferevent_openssl's
    /// next read to report. Nothing is taken while reading is off.
    private func takeBufferedRecords() -> Bool {
        guard let ssl, let bev, Int32(bufferevent_get_enabled(bev)) & EV_READ != 0 else { return false }
        let input = bufferevent_get_input(bev)
        var taken = 0
        while SSL_has_pending(ssl) == 1 {
            if taken >= readAheadTakeLimit { return true }
            var space = iovec() // libevent's evbuffer_iovec is the system's iovec
            guard evbuffer_reserve_space(input, 16 * 1024, &space, 1) == 1, let base = space.iov_base else { return false }
            let n = SSL_read(ssl, base, Int32(clamping: min(space.iov_len, readAheadTakeLimit - taken)))
            guard n > 0 else {
                ERR_clear_error()
                return false
            }
            space.iov_len = Int(n)
            evbuffer_commit_space(input, &space, 1)
            taken += Int(n)
        }
        return false
    }

    /// Runs the read callback again in a later turn of the loop (deferred: never from inside
    /// this one) for records `takeBufferedRecords` left at its limit.
    private func deliverHeldRecordsLater() {
        guard let ssl, let bev, SSL_has_pending(ssl) == 1 else { return }
        bufferevent_trigger(bev, Int16(EV_READ), Int32(BEV_TRIG_IGNORE_WATERMARKS.rawValue | BEV_TRIG_DEFER_CALLBACKS.rawValue))
    }

    /// Called by `DirectReads` after bytes were added to `input`.
    func directBytesArrived() {
        Transport.deliverNow(self) { $1.transportReadable($0) }
    }

    /// Called by `DirectReads` when reading stopped: EOF, error or timeout (`BEV_EVENT_*`).
    func directReadEnded(_ events: Int32) {
        let savedErrno = errno
        Transport.deliverNow(self) { transport, delegate in
            errno = savedErrno
            delegate.transportEvent(transport, events: Int16(events | BEV_EVENT_READING))
        }
    }

    /// The input evbuffer (bytes read, not yet consumed).
    var input: OpaquePointer { bufferevent_get_input(bev!) }
    /// The output evbuffer (bytes queued for the socket).
    var output: OpaquePointer { bufferevent_get_output(bev!) }

    var inputLength: Int { bev.map { evbuffer_get_length(bufferevent_get_input($0)) } ?? 0 }
    var outputLength: Int { bev.map { evbuffer_get_length(bufferevent_get_output($0)) } ?? 0 }

    /// Calls `body` with the first `count` bytes of the input (fewer when fewer arrived) made
    /// contiguous, still in the input: an empty view when nothing arrived, the transport is
    /// closed or the bytes could not be joined (out of memory). The view is valid only inside
    /// `body`, which must not consume input.
    @inline(__always)
    func withInput<R>(upTo count: Int, _ body: (ByteView) -> R) -> R {
        guard let bev else { return body(ByteView(start: nil, count: 0)) }
        return EventBuffer.withPulledUp(bufferevent_get_input(bev), count, body)
    }

    /// Discards the first `count` bytes of the input (consumed by whoever read them).
    func drainInput(_ count: Int) {
        guard let bev, count > 0 else { return }
        evbuffer_drain(bufferevent_get_input(bev), count)
    }

    /// Moves up to `buffer.count` bytes from the front of the input into `buffer`; returns
    /// how many.
    func removeInput(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard let bev, buffer.count > 0 else { return 0 }
        return max(Int(evbuffer_remove(bufferevent_get_input(bev), buffer.baseAddress, buffer.count)), 0)
    }

    /// Moves up to `count` bytes from the front of the input to the back of `buffer` (chains
    /// move; nothing is copied); returns how many.
    @discardableResult
    func removeInput(_ count: Int, into buffer: borrowing EventBuffer) -> Int {
        guard let bev, count > 0 else { return 0 }
        return max(Int(evbuffer_remove_buffer(bufferevent_get_input(bev), buffer.pointer, count)), 0)
    }

    /// Calls `body` with each contiguous piece of the input, in order, up to `limit` bytes
    /// (all when negative), until it returns false; nothing is consumed or pulled up. The
    /// pieces are valid only inside `body`, which must not consume input.
    func forEachInputChain(limit: Int = -1, _ body: (UnsafeRawBufferPointer) -> Bool) {
        guard let bev else { return }
        forEachChain(of: bufferevent_get_input(bev), limit: limit, body)
    }

    func enableReading() {
        guard let bev else { return }
        if let directReads { directReads.enable() } else { bufferevent_enable(bev, Int16(EV_READ)) }
    }

    /// Starts the read inactivity timeout again from now, if reading is on: a new exchange on
    /// a kept-alive connection.
    func restartReadTimeout() {
        guard let bev else { return }
        if let directReads {
            directReads.restartTimeout()
        } else if bufferevent_get_enabled(bev) & Int16(EV_READ) != 0 {
            // Enabling again re-adds the read event with its timeout.
            bufferevent_enable(bev, Int16(EV_READ))
        }
    }

    func disableReading() {
        guard let bev else { return }
        if let directReads { directReads.disable() } else { bufferevent_disable(bev, Int16(EV_READ)) }
    }

    /// libevent stops reading from the socket while `input` holds more than `high` bytes.
    func setReadHighWater(_ high: Int) {
        guard let bev else { return }
        if let directReads { directReads.setHighWater(high) } else { bufferevent_setwatermark(bev, Int16(EV_READ), 0, high) }
    }

    /// Read/write inactivity timeouts; nil turns one off.
    func setTimeouts(read: Double?, write: Double?) {
        guard let bev else { return }
        var r = timeval(seconds: read ?? 0)
        var w = timeval(seconds: write ?? 0)
        if let directReads { directReads.setTimeout(read) }
        let bufferedRead = directReads == nil ? read : nil
        withUnsafePointer(to: &r) { rp in
            withUnsafePointer(to: &w) { wp in
                _ = bufferevent_set_timeouts(bev, bufferedRead == nil ? nil : rp, write == nil ? nil : wp)
            }
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer) {
        guard let bev, bytes.count > 0 else { return }
        var offset = 0
        if let fd = directFD {
            // Nothing is queued, so writing now keeps the order; it saves a loop turn and the
            // epoll_ctl pair a queued write costs. Whatever the socket does not take is queued.
            let n = Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            if n > 0 { offset = n }
        } else if let ssl = directSSL {
            offset = Transport.sslWrite(ssl, bytes)
        }
        if offset < bytes.count {
            bufferevent_write(bev, bytes.baseAddress! + offset, bytes.count - offset)
        }
    }

    /// The socket, when a write may go to it directly now: plain socket, nothing queued.
    private var directFD: Int32? {
        guard directWrites, let bev, evbuffer_get_length(bufferevent_get_output(bev)) == 0 else { return nil }
        let fd = bufferevent_getfd(bev)
        return fd >= 0 ? fd : nil
    }

    /// The TLS connection, when a write may go through it directly now: handshake done,
    /// nothing queued, and OpenSSL not holding an unfinished write (which only a retry with
    /// the same bytes, bufferevent_openssl's, may finish).
    private var directSSL: OpaquePointer? {
        guard let ssl, tlsEstablished, let bev, evbuffer_get_length(bufferevent_get_output(bev)) == 0,
              SSL_want(ssl) != SSL_WRITING else { return nil }
        return ssl
    }

    /// Writes `bytes` with `SSL_write` (partial writes on: it returns after each record) until
    /// all went or OpenSSL could not go on (socket full, or an error bufferevent_openssl will
    /// meet and report on its own retry); returns how many bytes went.
    private static func sslWrite(_ ssl: OpaquePointer, _ bytes: UnsafeRawBufferPointer) -> Int {
        var offset = 0
        while offset < bytes.count {
            let n = SSL_write(ssl, bytes.baseAddress! + offset, Int32(clamping: bytes.count - offset))
            guard n > 0 else {
                // Nothing reads the queue here (no SSL_get_error); the retry meets the error
                // again, and bufferevent_openssl clears the queue before its own SSL_write.
                ERR_clear_error()
                break
            }
            offset += Int(n)
        }
        return offset
    }

    func write(_ bytes: [UInt8]) { bytes.withUnsafeBytes { write($0) } }

    func write(_ text: String) {
        var text = text
        text.withUTF8 { write(UnsafeRawBufferPointer($0)) }
    }

    /// `moveIn` from a buffer this side owns.
    @discardableResult
    func moveIn(from source: borrowing EventBuffer, count: Int) -> Int {
        moveIn(from: source.pointer, count: count)
    }

    /// `moveIn` from another transport's input (a request body on its way upstream).
    @discardableResult
    func moveIn(fromInputOf source: Transport, count: Int) -> Int {
        guard let sourceBev = source.bev else { return 0 }
        return moveIn(from: bufferevent_get_input(sourceBev), count: count)
    }

    /// Moves up to `count` bytes from `source` to this transport's output without copying.
    @discardableResult
    func moveIn(from source: OpaquePointer, count: Int) -> Int {
        guard bev != nil, count > 0 else { return 0 }
        var written = 0
        if let fd = directFD {
            let n = Int(evbuffer_write_atmost(source, fd, count))
            if n > 0 { written = n }
        } else if let ssl = directSSL {
            written = Transport.sslWrite(ssl, from: source, count: count)
        }
        if written < count { written += Int(evbuffer_remove_buffer(source, output, count - written)) }
        return written
    }

    /// `sslWrite` for the first `count` bytes of `source`, a contiguous piece at a time; drains
    /// what went. Stops at the first piece not written whole, so that piece's rest starts what
    /// is queued after it.
    private static func sslWrite(_ ssl: OpaquePointer, from source: OpaquePointer, count: Int) -> Int {
        var written = 0
        forEachChain(of: source, limit: count) { piece in
            let n = sslWrite(ssl, piece)
            written += n
            return n == piece.count
        }
        evbuffer_drain(source, written)
        return written
    }

    /// A short description of a `BEV_EVENT_*` set, with the TLS or socket error behind it.
    func describe(events: Int32) -> String {
        if events & BEV_EVENT_TIMEOUT != 0 { return "timed out" }
        if events & BEV_EVENT_EOF != 0 { return "closed by peer" }
        if events & BEV_EVENT_ERROR != 0 {
            let socketError = errno
            var tls = ""
            if let bev {
                while case let code = bufferevent_get_openssl_error(bev), code != 0 {
                    tls += "; " + OpenSSLErrors.text(code)
                }
            }
            tls += OpenSSLErrors.drain()
            if !tls.isEmpty { return "TLS failure" + tls }
            return String(cString: strerror(socketError))
        }
        return "event \(events)"
    }

    /// Frees the bufferevent (closing the socket). Idempotent.
    func close() {
        guard let bev else { return }
        self.bev = nil
        // Before the bufferevent closes the socket the event watches.
        directReads?.free()
        directReads = nil
        bufferevent_free(bev)
    }
}
