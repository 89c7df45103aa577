import COpenSSL

/// The certificate authorities a client `TLSContext` verifies its peer against: a PEM file given
/// on the command line, or the system trust store. One store serves every context that trusts
/// the same CAs (the upstream's HTTP/1.1 and HTTP/2 contexts, and the provider's), so the CAs
/// are parsed and held once.
///
/// A CA file is read at once: a file that is not a CA stops start-up, as it always did. The
/// system store (about 140 certificates, parsed whole by OpenSSL in about 50 ms) is read by
/// `load()`, which the sidecar calls at start-up when a TLS context uses it, so that no call pays
/// for it on the event loop; a store nothing uses is never read.
///
/// Used on the event loop that owns the contexts holding it.
package final class TrustStore {
    private var store: OpaquePointer?

    /// The system trust store (OpenSSL's default paths, `SSL_CERT_FILE` / `SSL_CERT_DIR`
    /// honoured), read on first use.
    package static func system() -> TrustStore { TrustStore(store: nil) }

    /// The CAs in the PEM file at `path`, read now.
    package static func file(_ path: String) throws(TLSError) -> TrustStore {
        guard let store = X509_STORE_new() else { throw TLSError.fromQueue("X509_STORE_new") }
        guard X509_STORE_load_file(store, path) == 1 else {
            X509_STORE_free(store)
            throw TLSError.fromQueue("cannot load CA file \(path)")
        }
        return TrustStore(store: store)
    }

    /// The CAs in `caFile` (read now) if one is given, else `system`.
    package static func file(_ caFile: String?, or system: TrustStore) throws(TLSError) -> TrustStore {
        guard let caFile else { return system }
        return try file(caFile)
    }

    private init(store: OpaquePointer?) { self.store = store }

    deinit { X509_STORE_free(store) }

    /// Reads the store now if it has not been read (the system store).
    package func load() throws(TLSError) { _ = try x509Store() }

    /// The OpenSSL store, read now if this is the system store's first use.
    func x509Store() throws(TLSError) -> OpaquePointer {
        if let store { return store }
        guard let made = X509_STORE_new() else { throw TLSError.fromQueue("X509_STORE_new") }
        guard X509_STORE_set_default_paths(made) == 1 else {
            X509_STORE_free(made)
            throw TLSError.fromQueue("cannot load the system trust store")
        }
        store = made
        return made
    }
}
