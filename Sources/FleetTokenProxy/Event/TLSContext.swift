import COpenSSL
import CShims

/// An OpenSSL `SSL_CTX` for one role: the client side (upstream, provider) verifying the peer
/// against a `TrustStore`, or the server side of a stand-in.
///
/// A client context is made when its first connection needs it, not at start-up: setting up
/// `SSL_CTX` runs much of libcrypto (provider and algorithm set-up), about 2 MB of its code made
/// resident in a sidecar that has not yet called its upstream. Its settings are fixed here, so
/// the context made later is the one that would have been made now.
package final class TLSContext {
    private var ctx: OpaquePointer?
    private let trust: TrustStore?
    private let alpn: [String]
    /// Client contexts only: sessions kept per origin and offered again (docs/CONTRACT.md §7).
    private let resumption: TLSResumption?
    /// Server contexts with ALPN only: the protocols offered, which the selection callback reads.
    private var serverALPN: ServerALPN?
    /// Client contexts only: what the client presents when a server asks for a certificate.
    private let clientCertificate: ClientCertificate?

    /// A client context: peer verification on, TLS 1.2 or later, optional ALPN list.
    package static func client(trust: TrustStore, alpn: [String] = []) -> TLSContext {
        client(trust: trust, alpn: alpn, handshakeFinished: { _ in })
    }

    /// A client context that reports each finished handshake, full or resumed.
    static func client(trust: TrustStore, alpn: [String] = [], handshakeFinished: @escaping (_ resumed: Bool) -> Void) -> TLSContext {
        TLSContext(ctx: nil, trust: trust, alpn: alpn, resumption: TLSResumption(handshakeFinished: handshakeFinished))
    }

    /// A client context like this one (its CAs, its ALPN, its handshake reports) that presents
    /// `certificate` when a server asks for one (mutual TLS), with its own session cache: a
    /// session is never resumed under another certificate.
    func presenting(_ certificate: ClientCertificate) -> TLSContext {
        TLSContext(ctx: nil, trust: trust, alpn: alpn, resumption: resumption.map { TLSResumption(handshakeFinished: $0.handshakeFinished) },
                   clientCertificate: certificate)
    }

    /// A server context from PEM files (stand-ins and tests only).
    package static func server(certificateFile: String, keyFile: String, alpn: [String] = []) throws(TLSError) -> TLSContext {
        try server(certificateFile: certificateFile, keyFile: keyFile, alpn: alpn, tls12Only: false)
    }

    /// A server context that asks each client for a certificate and takes any (or none) in the
    /// handshake: what was presented is judged by the server's handler, as Google's STS judges
    /// an X.509 subject token (stand-ins and tests only).
    package static func server(certificateFile: String, keyFile: String, requestingClientCertificates: Bool) throws(TLSError) -> TLSContext {
        let context = try server(certificateFile: certificateFile, keyFile: keyFile, alpn: [], tls12Only: false)
        if requestingClientCertificates, let ctx = context.ctx {
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, { _, _ in 1 })
            // A client resuming its session must find the context it was made in.
            let name = Array("fleet-token-proxy-stand-in".utf8)
            _ = SSL_CTX_set_session_id_context(ctx, name, UInt32(name.count))
        }
        return context
    }

    /// A server context; `tls12Only` caps it at TLS 1.2, for tests of a TLS 1.2 peer.
    static func server(certificateFile: String, keyFile: String, alpn: [String] = [], tls12Only: Bool) throws(TLSError) -> TLSContext {
        guard let ctx = SSL_CTX_new(TLS_server_method()) else { throw TLSError.fromQueue("SSL_CTX_new") }
        let context = TLSContext(ctx: ctx, trust: nil, alpn: [], resumption: nil)
        _ = fte_ssl_ctx_set_min_tls12(ctx)
        if tls12Only { _ = fte_ssl_ctx_set_max_tls12(ctx) }
        fte_ssl_ctx_set_modes(ctx)
        guard SSL_CTX_use_certificate_chain_file(ctx, certificateFile) == 1 else {
            throw TLSError.fromQueue("cannot load certificate \(certificateFile)")
        }
        guard SSL_CTX_use_PrivateKey_file(ctx, keyFile, SSL_FILETYPE_PEM) == 1 else {
            throw TLSError.fromQueue("cannot load key \(keyFile)")
        }
        if !alpn.isEmpty {
            let protocols = ServerALPN(alpn)
            context.serverALPN = protocols
            // The context holds `protocols` for as long as OpenSSL may call back with it.
            SSL_CTX_set_alpn_select_cb(ctx, { _, out, outLength, offered, offeredLength, arg in
                guard let arg, let out, let outLength, let offered else { return ServerALPN.noAcknowledgement }
                return Unmanaged<ServerALPN>.fromOpaque(arg).takeUnretainedValue().select(out, outLength, offered, offeredLength)
            }, Unmanaged.passUnretained(protocols).toOpaque())
        }
        return context
    }

    private init(ctx: OpaquePointer?, trust: TrustStore?, alpn: [String], resumption: TLSResumption?, clientCertificate: ClientCertificate? = nil) {
        self.ctx = ctx
        self.trust = trust
        self.alpn = alpn
        self.resumption = resumption
        self.clientCertificate = clientCertificate
    }

    deinit { SSL_CTX_free(ctx) }

    /// The client `SSL_CTX`, made on first use.
    private func clientContext() throws(TLSError) -> OpaquePointer {
        if let ctx { return ctx }
        guard let made = SSL_CTX_new(TLS_client_method()) else { throw TLSError.fromQueue("SSL_CTX_new") }
        do {
            _ = fte_ssl_ctx_set_min_tls12(made)
            fte_ssl_ctx_set_modes(made)
            SSL_CTX_set_verify(made, SSL_VERIFY_PEER, nil)
            if let trust { SSL_CTX_set1_cert_store(made, try trust.x509Store()) }
            if !alpn.isEmpty { try Self.setALPN(alpn, on: made) }
            try clientCertificate?.install(on: made)
            TLSResumption.install(on: made)
        } catch {
            SSL_CTX_free(made)
            throw error
        }
        ctx = made
        return made
    }

    private static func setALPN(_ protocols: [String], on ctx: OpaquePointer) throws(TLSError) {
        var wire: [UInt8] = []
        for p in protocols { wire.append(UInt8(p.utf8.count)); wire.append(contentsOf: p.utf8) }
        let rc = wire.withUnsafeBufferPointer { SSL_CTX_set_alpn_protos(ctx, $0.baseAddress, UInt32($0.count)) }
        // Unusually, 0 is success here.
        guard rc == 0 else { throw TLSError.fromQueue("cannot set ALPN") }
    }

    /// A new client `SSL` for one connection to `host`:`port`: SNI for names, the certificate
    /// checked against the name or IP address, and a session of that same origin offered if
    /// one is kept.
    func makeClientSSL(host: String, port: UInt16) throws(TLSError) -> OpaquePointer {
        guard let ssl = SSL_new(try clientContext()) else { throw TLSError.fromQueue("SSL_new") }
        let isIPLiteral = host.contains(":") || host.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || $0 == 46 }
        if isIPLiteral {
            let param = SSL_get0_param(ssl)
            guard X509_VERIFY_PARAM_set1_ip_asc(param, host) == 1 else {
                SSL_free(ssl)
                throw TLSError.fromQueue("bad IP address \(host)")
            }
        } else {
            guard fte_ssl_set_sni(ssl, host) == 1, fte_ssl_set_verify_host(ssl, host) == 1 else {
                SSL_free(ssl)
                throw TLSError.fromQueue("cannot set host name \(host)")
            }
        }
        resumption?.prepare(ssl, for: TLSSessionCache.Origin(host: host, port: port, serverName: host))
        return ssl
    }

    /// Sessions kept for `host`:`port` now (tests).
    func cachedSessions(host: String, port: UInt16) -> Int {
        resumption?.cache.count(for: TLSSessionCache.Origin(host: host, port: port, serverName: host)) ?? 0
    }

    /// A new server `SSL` for one accepted connection.
    func makeServerSSL() throws(TLSError) -> OpaquePointer {
        guard let ssl = SSL_new(ctx) else { throw TLSError.fromQueue("SSL_new") }
        return ssl
    }
}

/// An OpenSSL failure, with OpenSSL's own text from its error queue.
package struct TLSError: Error, CustomStringConvertible, Sendable {
    package let description: String

    /// Drains OpenSSL's (thread-local) error queue into one line after `context`.
    static func fromQueue(_ context: String) -> TLSError {
        TLSError(description: context + OpenSSLErrors.drain())
    }
}

enum OpenSSLErrors {
    /// The queued OpenSSL errors as "; text; text", emptying the queue.
    static func drain() -> String {
        var text = ""
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            text += "; " + Self.text(code)
        }
        return text
    }

    /// OpenSSL's text for one error code.
    static func text(_ code: UInt) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// The protocols a server context offers by ALPN, in the wire format (each a length byte, then
/// its name), and the choice among a client's. Invariant: `wire` is allocated once, never
/// written after `init`, and freed in `deinit`; a choice points into it, which is what OpenSSL
/// asks of a selection callback (the memory outlives the handshake: the context holds this).
private final class ServerALPN {
    static let acknowledged: Int32 = 0 // SSL_TLSEXT_ERR_OK
    static let noAcknowledgement: Int32 = 3 // SSL_TLSEXT_ERR_NOACK: no protocol in common, none chosen
    private let wire: UnsafeMutableBufferPointer<UInt8>

    init(_ protocols: [String]) {
        var bytes: [UInt8] = []
        for name in protocols { bytes.append(UInt8(name.utf8.count)); bytes.append(contentsOf: name.utf8) }
        wire = .allocate(capacity: bytes.count)
        _ = wire.initialize(from: bytes)
    }

    deinit { wire.deallocate() }

    /// The first of this server's protocols the client offers (RFC 7301: the server's
    /// preference), or no acknowledgement.
    func select(_ out: UnsafeMutablePointer<UnsafePointer<UInt8>?>, _ outLength: UnsafeMutablePointer<UInt8>,
                _ offered: UnsafePointer<UInt8>, _ offeredLength: UInt32) -> Int32 {
        var chosen: UnsafeMutablePointer<UInt8>?
        var chosenLength: UInt8 = 0
        let rc = SSL_select_next_proto(&chosen, &chosenLength, wire.baseAddress, UInt32(wire.count), offered, offeredLength)
        guard rc == OPENSSL_NPN_NEGOTIATED, let chosen else { return Self.noAcknowledgement }
        out.pointee = UnsafePointer(chosen)
        outLength.pointee = chosenLength
        return Self.acknowledged
    }
}
