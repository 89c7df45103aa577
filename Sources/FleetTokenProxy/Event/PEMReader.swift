import COpenSSL

/// PEM text in memory read by OpenSSL, the one way the sidecar does it: a memory BIO freed
/// before return, and a passphrase callback that has none, so an encrypted key is refused
/// instead of OpenSSL's default prompting on the terminal. The objects returned are the
/// caller's to free (`EVP_PKEY_free`, `X509_free`).
enum PEMReader {
    /// The first private key of `pem` (PKCS#8, PKCS#1 or SEC 1, unencrypted); nil when none
    /// can be read (OpenSSL's error queue says why).
    static func privateKey(_ pem: [UInt8]) -> OpaquePointer? {
        pem.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(clamping: raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
        }
    }

    /// The certificates of `pem` in order, at most `limit`, up to the first block that is not
    /// one (the end of the text is such a block: its "no start line" error is cleared).
    static func certificates(_ pem: [UInt8], limit: Int = .max) -> [OpaquePointer] {
        pem.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(clamping: raw.count)) else { return [] }
            defer { BIO_free(bio) }
            var certificates: [OpaquePointer] = []
            while certificates.count < limit, let x509 = PEM_read_bio_X509(bio, nil, { _, _, _, _ in 0 }, nil) {
                certificates.append(x509)
            }
            ERR_clear_error()
            return certificates
        }
    }
}
