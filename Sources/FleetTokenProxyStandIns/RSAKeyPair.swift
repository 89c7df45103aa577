import FleetTokenProxy
import COpenSSL

/// An OpenSSL call that failed, with the text OpenSSL put on its error queue.
package struct RSAKeyError: Error, Sendable, CustomStringConvertible {
    /// What this code was doing, e.g. "reading a private key".
    package let operation: String
    /// OpenSSL's error queue at the time, oldest first (may be empty).
    package let openSSLErrors: [String]

    package var description: String {
        openSSLErrors.isEmpty ? operation : "\(operation): \(openSSLErrors.joined(separator: "; "))"
    }

    /// Takes every entry off this thread's OpenSSL error queue, so the next call starts clean.
    static func drainingQueue(_ operation: String) -> RSAKeyError {
        var lines: [String] = []
        var code = ERR_get_error()
        while code != 0 {
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            lines.append(buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
            code = ERR_get_error()
        }
        return RSAKeyError(operation: operation, openSSLErrors: lines)
    }
}

/// An RSA private key that signs RS256 (RSASSA-PKCS1-v1_5 with SHA-256), as a token provider's
/// service account key does. The stand-in provider signs with it; the stand-in Fleet Engine
/// verifies with `publicKey`.
///
/// `@unchecked Sendable`: every stored property is a `let` set in `init`, the `EVP_PKEY` is only
/// read afterwards, and OpenSSL 3 allows one key to be used for signing from several threads at
/// once because each `sign` call has its own `EVP_MD_CTX`.
package final class RSAKeyPair: @unchecked Sendable {
    private let key: OpaquePointer
    /// The key id a JWT names in its `kid` header: hex of 8 random bytes unless given.
    package let keyID: String
    /// SubjectPublicKeyInfo PEM (`-----BEGIN PUBLIC KEY-----`).
    package let publicKeyPEM: String
    /// The matching verifier.
    package let publicKey: RSAPublicKey
    /// Signs: the sidecar's own RS256 signer, over the same key.
    private let signer: RSASigningKey

    /// A fresh key. RS256 needs at least 2048 bits (RFC 7518 §3.3).
    package static func generate(bits: Int = 2048) throws -> RSAKeyPair {
        guard bits >= 2048, bits <= 16384 else {
            throw RSAKeyError(operation: "RS256 needs an RSA key of 2048 to 16384 bits, not \(bits)", openSSLErrors: [])
        }
        ERR_clear_error()
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "RSA", nil) else {
            throw RSAKeyError.drainingQueue("creating an RSA key generation context")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var generated: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1,
              EVP_PKEY_CTX_set_rsa_keygen_bits(context, Int32(bits)) == 1,
              EVP_PKEY_generate(context, &generated) == 1,
              let generated
        else {
            throw RSAKeyError.drainingQueue("generating a \(bits)-bit RSA key")
        }
        return try RSAKeyPair(owning: generated, keyID: nil)
    }

    /// A key read from PEM (PKCS#8 or PKCS#1). `keyID` defaults to a random one.
    package convenience init(privateKeyPEM: String, keyID: String? = nil) throws {
        ERR_clear_error()
        let key = try RSAKeyPair.MemoryBIO.reading(privateKeyPEM) { bio in PEM_read_bio_PrivateKey(bio, nil, nil, nil) }
        guard let key else { throw RSAKeyError.drainingQueue("reading an RSA private key from PEM") }
        try self.init(owning: key, keyID: keyID)
    }

    /// Takes ownership of `key` (freed in `deinit`, or here if the key is unusable).
    private init(owning key: OpaquePointer, keyID: String?) throws {
        guard EVP_PKEY_is_a(key, "RSA") == 1 else {
            EVP_PKEY_free(key)
            throw RSAKeyError(operation: "the private key is not an RSA key", openSSLErrors: [])
        }
        do {
            let pem = try RSAKeyPair.MemoryBIO.writing("writing the public key as PEM") { bio in PEM_write_bio_PUBKEY(bio, key) }
            self.publicKeyPEM = pem
            self.publicKey = try RSAPublicKey(pem: pem)
            self.keyID = try keyID ?? Self.randomKeyID()
            let privatePEM = try RSAKeyPair.MemoryBIO.writing("writing the private key as PEM") { bio in
                PEM_write_bio_PrivateKey(bio, key, nil, nil, 0, nil, nil)
            }
            self.signer = try RSASigningKey(pem: privatePEM)
        } catch {
            EVP_PKEY_free(key)
            throw error
        }
        self.key = key
    }

    deinit { EVP_PKEY_free(key) }

    /// The private key as PKCS#8 PEM, for handing to another process.
    package func privateKeyPEM() throws -> String {
        try RSAKeyPair.MemoryBIO.writing("writing the private key as PEM") { bio in
            PEM_write_bio_PrivateKey(bio, key, nil, nil, 0, nil, nil)
        }
    }

    /// RS256 signature of `data`.
    package func sign(_ data: [UInt8]) throws -> [UInt8] {
        try signer.sign(data)
    }

    /// The public key's modulus and exponent, big-endian without leading zeros: the `n` and
    /// `e` of a JSON Web Key (RFC 7518 §6.3.1).
    package func publicNumbers() throws -> (modulus: [UInt8], exponent: [UInt8]) {
        func number(_ name: String) throws -> [UInt8] {
            var bignum: OpaquePointer?
            guard EVP_PKEY_get_bn_param(key, name, &bignum) == 1, let bignum else {
                throw RSAKeyError.drainingQueue("reading the key's \(name)")
            }
            defer { BN_free(bignum) }
            var bytes = [UInt8](repeating: 0, count: (Int(BN_num_bits(bignum)) + 7) / 8)
            _ = BN_bn2bin(bignum, &bytes)
            return bytes
        }
        return (try number("n"), try number("e"))
    }

    private static func randomKeyID() throws -> String {
        var bytes = [UInt8](repeating: 0, count: 8)
        guard RAND_bytes(&bytes, Int32(bytes.count)) == 1 else { throw RSAKeyError.drainingQueue("drawing a random key id") }
        return bytes.map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }
}

/// An RSA public key that verifies RS256 signatures.
///
/// `@unchecked Sendable`: the `EVP_PKEY` is set once in `init` and only read afterwards; each
/// `verify` call has its own `EVP_MD_CTX`.
package final class RSAPublicKey: @unchecked Sendable {
    private let key: OpaquePointer

    /// A key from SubjectPublicKeyInfo PEM (`-----BEGIN PUBLIC KEY-----`).
    package init(pem: String) throws {
        ERR_clear_error()
        let key = try RSAKeyPair.MemoryBIO.reading(pem) { bio in PEM_read_bio_PUBKEY(bio, nil, nil, nil) }
        guard let key else { throw RSAKeyError.drainingQueue("reading an RSA public key from PEM") }
        guard EVP_PKEY_is_a(key, "RSA") == 1 else {
            EVP_PKEY_free(key)
            throw RSAKeyError(operation: "the public key is not an RSA key", openSSLErrors: [])
        }
        self.key = key
    }

    /// A key from its modulus and exponent (big-endian), as a JSON Web Key gives them.
    package init(modulus: [UInt8], exponent: [UInt8]) throws {
        ERR_clear_error()
        guard !modulus.isEmpty, !exponent.isEmpty,
              let n = BN_bin2bn(modulus, Int32(modulus.count), nil) else {
            throw RSAKeyError(operation: "an RSA public key needs a modulus and an exponent", openSSLErrors: [])
        }
        defer { BN_free(n) }
        guard let e = BN_bin2bn(exponent, Int32(exponent.count), nil) else { throw RSAKeyError.drainingQueue("reading the exponent") }
        defer { BN_free(e) }
        guard let builder = OSSL_PARAM_BLD_new() else { throw RSAKeyError.drainingQueue("building key parameters") }
        defer { OSSL_PARAM_BLD_free(builder) }
        // The builder keeps the names' pointers until `to_param`: static strings, not the
        // temporary C strings a Swift literal would be passed as.
        func name(_ text: StaticString) -> UnsafePointer<CChar> {
            UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
        }
        guard OSSL_PARAM_BLD_push_BN(builder, name("n"), n) == 1, OSSL_PARAM_BLD_push_BN(builder, name("e"), e) == 1,
              let parameters = OSSL_PARAM_BLD_to_param(builder)
        else { throw RSAKeyError.drainingQueue("building key parameters") }
        defer { OSSL_PARAM_free(parameters) }
        // The context keeps the key type's name too.
        guard let context = EVP_PKEY_CTX_new_from_name(nil, name("RSA"), nil) else { throw RSAKeyError.drainingQueue("creating an RSA context") }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        // EVP_PKEY_PUBLIC_KEY, a macro Swift cannot import: the public key with its parameters.
        let publicKeySelection = Int32(OSSL_KEYMGMT_SELECT_PUBLIC_KEY | OSSL_KEYMGMT_SELECT_ALL_PARAMETERS)
        guard EVP_PKEY_fromdata_init(context) == 1,
              EVP_PKEY_fromdata(context, &key, publicKeySelection, parameters) == 1,
              let key
        else { throw RSAKeyError.drainingQueue("making an RSA public key from its numbers") }
        self.key = key
    }

    deinit { EVP_PKEY_free(key) }

    /// Whether `signature` is a valid RS256 signature of `data` by this key.
    package func verify(_ data: [UInt8], signature: [UInt8]) -> Bool {
        guard let context = EVP_MD_CTX_new() else { return false }
        defer {
            EVP_MD_CTX_free(context)
            // A bad signature leaves entries on the queue; they are an answer here, not an error.
            ERR_clear_error()
        }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else { return false }
        return EVP_DigestVerify(context, signature, signature.count, data, data.count) == 1
    }
}

extension RSAKeyPair {
    /// PEM in and out of OpenSSL through memory BIOs (nested: file-level names share the module).
    fileprivate enum MemoryBIO {
        /// Runs `body` with a read-only memory BIO over `text`.
        static func reading<T>(_ text: String, _ body: (OpaquePointer) -> T) throws -> T {
            let bytes = Array(text.utf8)
            return try bytes.withUnsafeBytes { raw in
                guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else {
                    throw RSAKeyError.drainingQueue("creating a memory BIO")
                }
                defer { BIO_free(bio) }
                return body(bio)
            }
        }

        /// Runs `write` against an empty memory BIO and returns what it wrote.
        static func writing(_ operation: String, _ write: (OpaquePointer) -> Int32) throws -> String {
            ERR_clear_error()
            guard let bio = BIO_new(BIO_s_mem()) else { throw RSAKeyError.drainingQueue("creating a memory BIO") }
            defer { BIO_free(bio) }
            guard write(bio) == 1 else { throw RSAKeyError.drainingQueue(operation) }
            var bytes = [UInt8](repeating: 0, count: BIO_ctrl_pending(bio))
            let read = BIO_read(bio, &bytes, Int32(bytes.count))
            guard read == Int32(bytes.count) else { throw RSAKeyError.drainingQueue(operation) }
            return String(decoding: bytes, as: UTF8.self)
        }
    }
}
