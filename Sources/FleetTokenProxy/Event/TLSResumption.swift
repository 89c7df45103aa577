import COpenSSL
import CShims
#if canImport(Glibc)
import Glibc
#endif

/// TLS session resumption for one client `SSL_CTX`: sessions the handshakes (or, in TLS 1.3,
/// the NewSessionTicket messages after them) deliver are kept in a `TLSSessionCache` under the
/// connection's origin, and the origin's session is offered by the next connection to it.
/// Every finished handshake is reported, full or resumed.
///
/// OpenSSL's callbacks find their way back here through a `ConnectionTag` each client `SSL`
/// carries in its ex_data. Loop-thread only.
final class TLSResumption {
    let cache: TLSSessionCache
    let handshakeFinished: (_ resumed: Bool) -> Void

    init(cache: TLSSessionCache = TLSSessionCache(), handshakeFinished: @escaping (_ resumed: Bool) -> Void) {
        self.cache = cache
        self.handshakeFinished = handshakeFinished
    }

    /// Turns on a client session cache on `ctx` that hands every new session to the callback
    /// and stores none itself, and the handshake-done report. Both callbacks are thin
    /// trampolines: a `SSL` without a tag (or whose resumption is gone) is left alone.
    static func install(on ctx: OpaquePointer) {
        fte_ssl_ctx_set_client_session_cache(ctx)
        SSL_CTX_sess_set_new_cb(ctx) { ssl, session in
            if let ssl, let session, let tag = ConnectionTag.of(ssl), let resumption = tag.resumption {
                resumption.keep(session, for: tag.origin)
            }
            return 0 // OpenSSL keeps its own reference on `session`, and frees it
        }
        SSL_CTX_set_info_callback(ctx) { ssl, kind, _ in
            guard kind & SSL_CB_HANDSHAKE_DONE != 0, let ssl, let tag = ConnectionTag.of(ssl), !tag.handshakeReported else { return }
            tag.handshakeReported = true
            tag.resumption?.handshakeFinished(SSL_session_reused(ssl) == 1)
        }
    }

    /// Tags a new client `ssl` with `origin` and offers the origin's session, if one is kept.
    /// Without a tag the connection still works, with a full handshake and nothing kept.
    func prepare(_ ssl: OpaquePointer, for origin: TLSSessionCache.Origin) {
        guard ConnectionTag.attach(ConnectionTag(origin: origin, resumption: self), to: ssl) else { return }
        // A copy again: the connection's fate (see `keep`) must not reach the kept session.
        cache.withSession(for: origin, now: time(nil)) { session in
            guard let copy = SSL_SESSION_dup(session) else { return }
            SSL_set_session(ssl, copy) // takes its own reference
            SSL_SESSION_free(copy)
        }
    }

    /// Keeps a copy of a session delivered for `origin`, if it can be resumed at all. A copy:
    /// OpenSSL marks the connection's own session not resumable when its `SSL` is freed without
    /// a close_notify, which is how a pooled connection usually ends.
    private func keep(_ session: OpaquePointer, for origin: TLSSessionCache.Origin) {
        guard SSL_SESSION_is_resumable(session) == 1, let copy = SSL_SESSION_dup(session) else { return }
        let expires = SSL_SESSION_get_time(copy) + SSL_SESSION_get_timeout(copy)
        if !cache.insert(copy, expires: expires, for: origin) { SSL_SESSION_free(copy) }
    }
}

/// What a client `SSL` carries for OpenSSL's callbacks: its origin and a weak way back to the
/// resumption state (an `SSL` may outlive its context's owner).
///
/// Invariant: a tag stored in an `SSL` holds one retain, given back exactly once by the ex_data
/// free callback when OpenSSL frees the `SSL`. Client `SSL`s are never `SSL_dup`ed (no dup
/// callback: a copy would share the retain).
private final class ConnectionTag {
    let origin: TLSSessionCache.Origin
    weak var resumption: TLSResumption?
    var handshakeReported = false

    init(origin: TLSSessionCache.Origin, resumption: TLSResumption) {
        self.origin = origin
        self.resumption = resumption
    }

    /// The process's ex_data slot for tags on `SSL`s; -1 if OpenSSL could not make one.
    private static let index: Int32 = CRYPTO_get_ex_new_index(CRYPTO_EX_INDEX_SSL, 0, nil, nil, nil) { _, pointer, _, _, _, _ in
        if let pointer { Unmanaged<ConnectionTag>.fromOpaque(pointer).release() }
    }

    /// Stores `tag` in `ssl` (retained until the `SSL` is freed); false if it cannot.
    static func attach(_ tag: ConnectionTag, to ssl: OpaquePointer) -> Bool {
        guard index >= 0 else { return false }
        let pointer = Unmanaged.passRetained(tag).toOpaque()
        guard SSL_set_ex_data(ssl, index, pointer) == 1 else {
            Unmanaged<ConnectionTag>.fromOpaque(pointer).release()
            return false
        }
        return true
    }

    /// The tag `ssl` carries, if any (server `SSL`s carry none).
    static func of(_ ssl: OpaquePointer) -> ConnectionTag? {
        guard index >= 0, let pointer = SSL_get_ex_data(ssl, index) else { return nil }
        return Unmanaged<ConnectionTag>.fromOpaque(pointer).takeUnretainedValue()
    }
}
