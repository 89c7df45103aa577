#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import COpenSSL

/// A certificate and its private key, as a TLS client presents them when the server asks (an
/// X.509 `external_account` over mutual TLS, docs/CONTRACT.md §4a). Read from PEM: the
/// certificate file's first certificate is the leaf, any after it go with it as its chain; the
/// key (PKCS#8, PKCS#1 or SEC 1, unencrypted) must be the leaf's.
///
/// Invariant: `leaf`, each of `chain` and `key` are OpenSSL objects owned by this object alone,
/// never changed after `init` (a context that presents them takes references of its own), and
/// freed in `deinit`. Nothing of the key is ever shown: errors name the file and what is wrong.
package final class ClientCertificate {
    private let leaf: OpaquePointer
    private let chain: [OpaquePointer]
    private let key: OpaquePointer
    /// The leaf as DER: what a subject token carries, and what tells two reads apart.
    package let leafDER: [UInt8]

    /// A certificate or key file is a few kilobytes.
    static let maximumFileBytes = 64 * 1024

    /// Reads both files now; a missing, unreadable or unusable file, or a key that is not the
    /// certificate's, is an error naming which.
    package static func load(certificateFile: String, keyFile: String) throws(ClientCertificateError) -> ClientCertificate {
        guard let certificate = read(certificateFile) else {
            throw ClientCertificateError(.unreadable, "the certificate file \(certificateFile) cannot be read (or is larger than \(maximumFileBytes) bytes)")
        }
        guard let key = read(keyFile) else {
            throw ClientCertificateError(.unreadable, "the private key file \(keyFile) cannot be read (or is larger than \(maximumFileBytes) bytes)")
        }
        return try ClientCertificate(certificatePEM: certificate, keyPEM: key, certificateFile: certificateFile, keyFile: keyFile)
    }

    package init(certificatePEM: [UInt8], keyPEM: [UInt8], certificateFile: String, keyFile: String) throws(ClientCertificateError) {
        ERR_clear_error()
        let certificates = PEMReader.certificates(certificatePEM)
        guard let first = certificates.first else {
            throw ClientCertificateError(.unusable, "the certificate file \(certificateFile) holds no PEM certificate")
        }
        // An encrypted key is refused, never prompted for.
        let readKey = PEMReader.privateKey(keyPEM)
        ERR_clear_error()
        guard let readKey else {
            certificates.forEach { X509_free($0) }
            throw ClientCertificateError(.unusable, "the private key file \(keyFile) holds no unencrypted PEM private key")
        }
        guard X509_check_private_key(first, readKey) == 1 else {
            ERR_clear_error()
            certificates.forEach { X509_free($0) }
            EVP_PKEY_free(readKey)
            throw ClientCertificateError(.mismatched, "the private key in \(keyFile) is not the key of the certificate in \(certificateFile)")
        }
        leaf = first
        chain = Array(certificates.dropFirst())
        key = readKey
        leafDER = X509DER.encode(first)
    }

    deinit {
        X509_free(leaf)
        chain.forEach { X509_free($0) }
        EVP_PKEY_free(key)
    }

    /// Makes `ctx` present this certificate, its chain and key to a server that asks.
    func install(on ctx: OpaquePointer) throws(TLSError) {
        guard SSL_CTX_use_certificate(ctx, leaf) == 1, SSL_CTX_use_PrivateKey(ctx, key) == 1 else {
            throw TLSError.fromQueue("cannot present the client certificate")
        }
        for certificate in chain {
            // SSL_CTX_add1_chain_cert, a macro: the context takes its own reference.
            guard SSL_CTX_ctrl(ctx, SSL_CTRL_CHAIN_CERT, 1, UnsafeMutableRawPointer(certificate)) == 1 else {
                throw TLSError.fromQueue("cannot present the client certificate's chain")
            }
        }
    }

    private static func read(_ path: String) -> [UInt8]? {
        guard let data = FileManager.default.contents(atPath: path), data.count <= maximumFileBytes else { return nil }
        return Array(data)
    }
}

/// Why a certificate and key cannot be presented: which file, and what is wrong with it.
package struct ClientCertificateError: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Kind: Sendable, Equatable {
        /// A file is missing, unreadable or too large.
        case unreadable
        /// A file holds no certificate or no unencrypted key.
        case unusable
        /// The key is not the certificate's.
        case mismatched
    }

    package var kind: Kind
    package var message: String
    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    package var description: String { message }
}
