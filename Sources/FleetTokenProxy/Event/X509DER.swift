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
        let read = PEMReader.certificates(pem, limit: count)
        defer { read.forEach { X509_free($0) } }
        // Fewer than the blocks: one of them is not a certificate.
        return read.count == count ? read.map(encode) : nil
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
