import COpenSSL

/// The only form in which a token may appear in a log line or a metric: the last six hex
/// digits of its SHA-256, enough to tell two tokens apart and useless to an attacker.
package enum TokenFingerprint {
    package static func of(_ token: String) -> String {
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        _ = Array(token.utf8).withUnsafeBufferPointer { input in
            digest.withUnsafeMutableBufferPointer { output in
                SHA256(input.baseAddress, input.count, output.baseAddress)
            }
        }
        let hexDigits = Array("0123456789abcdef".utf8)
        var hex: [UInt8] = []
        hex.reserveCapacity(6)
        for byte in digest.suffix(3) {
            hex.append(hexDigits[Int(byte >> 4)])
            hex.append(hexDigits[Int(byte & 0x0f)])
        }
        return String(decoding: hex, as: UTF8.self)
    }
}
