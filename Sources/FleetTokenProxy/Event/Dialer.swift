import CEvent
import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// Opens a bufferevent towards an origin: plain TCP, or TLS with SNI and certificate checks;
/// numeric hosts connect at once, names resolve through the loop's async DNS.
enum Dialer {
    /// A connecting bufferevent, or a failure to report. The caller sets its callbacks and
    /// receives `BEV_EVENT_CONNECTED` (after the TLS handshake, for TLS) or an error event.
    static func connect(loop: EventLoop, origin: Origin, tls: TLSContext?, timeout: Double) -> Result<OpaquePointer, ProxyFailure> {
        let options = Int32(BEV_OPT_CLOSE_ON_FREE.rawValue)
        let bev: OpaquePointer?
        if let tls {
            let ssl: OpaquePointer
            do { ssl = try tls.makeClientSSL(host: origin.host, port: origin.port) } catch {
                return .failure(.upstreamUnavailable("TLS set-up for \(origin) failed: \(error)"))
            }
            bev = bufferevent_openssl_socket_new(loop.base, -1, ssl, BUFFEREVENT_SSL_CONNECTING, options)
            if bev == nil { SSL_free(ssl) }
        } else {
            bev = bufferevent_socket_new(loop.base, -1, options)
        }
        guard let bev else { return .failure(.upstreamUnavailable("cannot create a connection to \(origin)")) }
        var tv = timeval(seconds: timeout)
        bufferevent_set_timeouts(bev, &tv, &tv)
        bufferevent_enable(bev, Int16(EV_READ | EV_WRITE))
        let rc: Int32
        if let address = SocketAddress(numericHost: origin.host, port: origin.port) {
            rc = address.withSockaddr { sa, len in bufferevent_socket_connect(bev, sa, Int32(len)) }
        } else {
            rc = bufferevent_socket_connect_hostname(bev, loop.dns, AF_UNSPEC, origin.host, Int32(origin.port))
        }
        if rc != 0 {
            let reason = String(cString: strerror(errno))
            bufferevent_free(bev)
            return .failure(.upstreamUnavailable("cannot connect to \(origin): \(reason)"))
        }
        return .success(bev)
    }

    /// Turns off Nagle on a connected bufferevent's socket: requests and answers are whole
    /// messages written at once, and waiting for more only adds latency.
    static func setNoDelay(_ bev: OpaquePointer) {
        var one: Int32 = 1
        let fd = bufferevent_getfd(bev)
        if fd >= 0 { setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size)) }
    }

    /// The ALPN protocol a TLS bufferevent negotiated, if any.
    static func negotiatedALPN(_ bev: OpaquePointer) -> String? {
        guard let ssl = bufferevent_openssl_get_ssl(bev) else { return nil }
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }
}
