import COpenSSL
import FleetTokenProxy

/// The CA a workload identity pool's X.509 provider trusts (its trust store's anchor), for the
/// stand-in STS: a certificate chain presented by a workload is verified against it, as Google's
/// STS verifies one against the pool's trust store.
///
/// Invariant: `store` is an `X509_STORE` holding the anchor, owned by this object alone, never
/// changed after `init` and freed in `deinit`; each verification makes and frees its own
/// certificates, stack and context.
package final class StandInTrustAnchor {
    private let store: OpaquePointer

    /// The CA certificates in the PEM file at `caFile`.
    package init(caFile: String) throws {
        ERR_clear_error()
        guard let store = X509_STORE_new() else { throw RSAKeyError.drainingQueue("X509_STORE_new") }
        guard X509_STORE_load_file(store, caFile) == 1 else {
            X509_STORE_free(store)
            throw RSAKeyError.drainingQueue("reading the trust anchor \(caFile)")
        }
        self.store = store
    }

    deinit { X509_STORE_free(store) }

    /// Whether `leaf` (DER) chains to the anchor through `intermediates` (DER), now.
    package func verifies(leaf: [UInt8], intermediates: [[UInt8]]) -> Bool {
        guard let leafCertificate = Self.certificate(leaf), let untrusted = OPENSSL_sk_new_null() else { return false }
        defer {
            X509_free(leafCertificate)
            // Frees each intermediate pushed, then the stack.
            OPENSSL_sk_pop_free(untrusted) { X509_free(OpaquePointer($0)) }
        }
        for der in intermediates {
            guard let certificate = Self.certificate(der) else { return false }
            guard OPENSSL_sk_push(untrusted, UnsafeRawPointer(certificate)) > 0 else {
                X509_free(certificate)
                return false
            }
        }
        guard let context = X509_STORE_CTX_new() else { return false }
        defer { X509_STORE_CTX_free(context) }
        guard X509_STORE_CTX_init(context, store, leafCertificate, untrusted) == 1 else { return false }
        let verified = X509_verify_cert(context) == 1
        ERR_clear_error()
        return verified
    }

    /// A certificate from its DER, owned by the caller; nil when the bytes are not one.
    private static func certificate(_ der: [UInt8]) -> OpaquePointer? {
        der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_X509(nil, &cursor, buffer.count)
        }
    }
}
