import COpenSSL

/// An RSA private key that signs RS256 (RSASSA-PKCS1-v1_5 with SHA-256), the only algorithm
/// Fleet Engine takes (docs/CONTRACT.md §2). The one key the sidecar signs with (a
/// `ClientCertificate`'s key only opens TLS connections).
///
/// Invariant: `key` is an RSA `EVP_PKEY` of at least 2048 bits, owned by this object alone,
/// never changed after `init` and freed in `deinit`.
///
/// `@unchecked Sendable`: OpenSSL 3 lets several threads use one `EVP_PKEY` at once as long as
/// none of them changes it; each `sign` makes its own `EVP_MD_CTX`, and the error queue it
/// reads is the calling thread's own. So the signing workers share one key without a lock.
package final class RSASigningKey: @unchecked Sendable {
    private let key: OpaquePointer
    /// RS256 needs at least 2048 bits (RFC 7518 §3.3).
    static let minimumBits = 2048

    /// A key from unencrypted PEM (PKCS#8, as a service-account key file holds it). An
    /// encrypted key is refused rather than prompting for a passphrase on the terminal.
    package init(pem: String) throws(SigningKeyError) {
        ERR_clear_error()
        guard let read = PEMReader.privateKey(Array(pem.utf8)) else {
            throw SigningKeyError("the private key cannot be read" + OpenSSLErrors.drain())
        }
        guard EVP_PKEY_is_a(read, "RSA") == 1 else {
            EVP_PKEY_free(read)
            throw SigningKeyError("the private key is not an RSA key (Fleet Engine takes RS256 only)")
        }
        let bits = Int(EVP_PKEY_get_bits(read))
        guard bits >= Self.minimumBits else {
            EVP_PKEY_free(read)
            throw SigningKeyError("the private key has \(bits) bits; RS256 needs at least \(Self.minimumBits)")
        }
        key = read
    }

    deinit { EVP_PKEY_free(key) }

    /// The RS256 signature of `data`. Safe from any thread.
    package func sign(_ data: [UInt8]) throws(SigningKeyError) -> [UInt8] {
        ERR_clear_error()
        guard let context = EVP_MD_CTX_new() else { throw SigningKeyError("cannot sign" + OpenSSLErrors.drain()) }
        defer { EVP_MD_CTX_free(context) }
        var length = 0
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1,
              EVP_DigestSign(context, nil, &length, data, data.count) == 1
        else { throw SigningKeyError("cannot start an RS256 signature" + OpenSSLErrors.drain()) }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, data, data.count) == 1 else {
            throw SigningKeyError("RS256 signing failed" + OpenSSLErrors.drain())
        }
        signature.removeSubrange(length...)
        return signature
    }
}

/// A key that cannot be loaded or cannot sign, with OpenSSL's own text; never key material.
package struct SigningKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    package var message: String
    package init(_ message: String) { self.message = message }
    package var description: String { message }
}
