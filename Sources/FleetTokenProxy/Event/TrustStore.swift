import COpenSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The certificate authorities a client `TLSContext` verifies its peer against: a PEM file given
/// on the command line, or the system trust store. One store serves every context that trusts
/// the same CAs (the upstream's HTTP/1.1 and HTTP/2 contexts, and the provider's), so the CAs
/// are read and held once.
///
/// A CA file is read at once: a file that is not a CA stops start-up, as it always did.
///
/// The system store is looked up by directory: OpenSSL reads a CA from the hashed certificate
/// directory (`/etc/ssl/certs` on Debian, one file per CA named by its subject's hash) when a
/// verification asks for that subject, and keeps it. Parsing the whole bundle instead (about 140
/// certificates) held about 0.9 MB of the idle sidecar's heap for the one or two CAs a Fleet
/// Engine upstream chains to (README, Benchmark: idle memory). The bundle file is read whole, as
/// OpenSSL's default paths would, only when `SSL_CERT_FILE` names one, or when no directory holds
/// a hashed certificate (a system whose CAs are a bundle alone).
///
/// Used on the event loop that owns the contexts holding it.
package final class TrustStore {
    private var store: OpaquePointer?
    /// Where the system's CAs are; nil for a store read from a CA file.
    private let system: SystemLocation?

    /// The system store's places: OpenSSL's default directory and file, or the ones
    /// `SSL_CERT_DIR` (a colon-separated list) and `SSL_CERT_FILE` name.
    struct SystemLocation {
        var directories: String
        var file: String
        /// `SSL_CERT_FILE` named the file: the operator asked for it, so it is read whatever
        /// the directories hold.
        var fileNamed: Bool
    }

    /// The system trust store, set up on first use, its places read from `environment`
    /// (the process's, by default).
    package static func system(environment: (String) -> String? = TrustStore.processVariable) -> TrustStore {
        let namedFile = environment(String(cString: X509_get_default_cert_file_env()))
        let location = SystemLocation(
            directories: environment(String(cString: X509_get_default_cert_dir_env())) ?? String(cString: X509_get_default_cert_dir()),
            file: namedFile ?? String(cString: X509_get_default_cert_file()),
            fileNamed: namedFile != nil)
        return TrustStore(store: nil, system: location)
    }

    /// A variable of the process's environment, as OpenSSL itself would read it.
    package static func processVariable(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// The CAs in the PEM file at `path`, read now.
    package static func file(_ path: String) throws(TLSError) -> TrustStore {
        guard let store = X509_STORE_new() else { throw TLSError.fromQueue("X509_STORE_new") }
        guard X509_STORE_load_file(store, path) == 1 else {
            X509_STORE_free(store)
            throw TLSError.fromQueue("cannot load CA file \(path)")
        }
        return TrustStore(store: store, system: nil)
    }

    /// The CAs in `caFile` (read now) if one is given, else `system`.
    package static func file(_ caFile: String?, or system: TrustStore) throws(TLSError) -> TrustStore {
        guard let caFile else { return system }
        return try file(caFile)
    }

    private init(store: OpaquePointer?, system: SystemLocation?) {
        self.store = store
        self.system = system
    }

    deinit { X509_STORE_free(store) }

    /// Sets the store up now if it has not been (the system store): its directory lookup, or
    /// the bundle read whole where there is no hashed directory.
    package func load() throws(TLSError) { _ = try x509Store() }

    /// The OpenSSL store, set up now if this is the system store's first use.
    func x509Store() throws(TLSError) -> OpaquePointer {
        if let store { return store }
        // Only the system store is made late: a CA file's is read in `file(_:)`.
        guard let system else { preconditionFailure("a CA file's store is read when it is made") }
        guard let made = X509_STORE_new() else { throw TLSError.fromQueue("X509_STORE_new") }
        let hashed = system.directories.split(separator: ":").contains { Self.holdsHashedCertificate(directory: String($0)) }
        if hashed {
            guard let lookup = X509_STORE_add_lookup(made, X509_LOOKUP_hash_dir()),
                  X509_LOOKUP_ctrl(lookup, X509_L_ADD_DIR, system.directories, Int(X509_FILETYPE_PEM), nil) == 1 else {
                X509_STORE_free(made)
                throw TLSError.fromQueue("cannot use the system certificate directory \(system.directories)")
            }
        }
        if system.fileNamed || !hashed {
            // As OpenSSL's default paths: a missing bundle is no start-up error (the handshake
            // then fails verification, and says so).
            _ = X509_STORE_load_file(made, system.file)
            ERR_clear_error()
        }
        store = made
        return made
    }

    /// The number of CAs the store holds now: those read so far (tests: the directory is read a
    /// CA at a time).
    var heldCertificates: Int {
        guard let store else { return 0 }
        return Int(OPENSSL_sk_num(X509_STORE_get0_objects(store)))
    }

    /// Whether `directory` holds at least one CA under its subject hash (`5ed36f99.0`), the
    /// names `openssl rehash` and Debian's update-ca-certificates make: a directory that
    /// OpenSSL's hashed lookup can use.
    static func holdsHashedCertificate(directory: String) -> Bool {
        guard let handle = opendir(directory) else { return false }
        defer { closedir(handle) }
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if isHashedCertificateName(name) { return true }
        }
        return false
    }

    /// Eight lower-case hex digits, a dot, a decimal sequence number: a CA (`.rN` names a CRL).
    static func isHashedCertificateName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard bytes.count >= 10, bytes[8] == UInt8(ascii: ".") else { return false }
        let hex = bytes[..<8].allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }
        let sequence = bytes[9...].allSatisfy { $0 >= 48 && $0 <= 57 }
        return hex && sequence
    }
}
