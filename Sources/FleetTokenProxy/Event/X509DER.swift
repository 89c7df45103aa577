import COpenSSL

/// X.509 certificates as their DER bytes, the form a subject token and a comparison want.
/// OpenSSL's `X509` objects made here are freed before each function returns: no pointer leaves.
package enum X509DER {
    static let beginMarker = Array("-----BEGIN CERTIFICATE-----".utf8)

    /// Every `CERTIFICATE` block of PEM text, each as DER, in the file's order, as Google's
    /// libraries split a trust chain file; nil when one of them is not a certificate. Text
    /// outside the blocks (comments, other kinds of block) is not read.
    package static func certificates(pem: [UInt8]) -> [[UInt8]]? {
        var count = 0
        var rest = pem[...]
        while let range = rest.firstRange(of: beginMarker) {
            count += 1
            rest = rest[range.upperBound...]
        }
        return pem.withUnsafeBytes { raw -> [[UInt8]]? in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(clamping: raw.count)) else { return nil }
            defer { BIO_free(bio) }
            var certificates: [[UInt8]] = []
            for _ in 0..<count {
                // A passphrase callback that has none: OpenSSL's default would read the terminal.
                guard let x509 = PEM_read_bio_X509(bio, nil, { _, _, _, _ in 0 }, nil) else {
                    ERR_clear_error()
                    return nil
                }
                certificates.append(encode(x509))
                X509_free(x509)
            }
            return certificates
        }
    }

    /// One certificate's DER encoding.
    static func encode(_ x509: OpaquePointer) -> [UInt8] {
        let length = Int(i2d_X509(x509, nil))
        guard length > 0 else { return [] }
        var der = [UInt8](repeating: 0, count: length)
        der.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            _ = i2d_X509(x509, &cursor)
        }
        return der
    }

    /// The certificate the peer of `ssl` presented in its handshake, if it presented one.
    static func peer(of ssl: OpaquePointer) -> [UInt8]? {
        guard let x509 = SSL_get1_peer_certificate(ssl) else { return nil }
        defer { X509_free(x509) }
        return encode(x509)
    }
}
