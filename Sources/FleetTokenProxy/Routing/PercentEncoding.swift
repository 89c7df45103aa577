/// Percent-encoding (RFC 3986 §2.1) of a value the sidecar puts into a URL or a form body:
/// every byte but the unreserved ones (ALPHA DIGIT - . _ ~) as `%XX`, so that no value can
/// change the shape of what it goes into. Used for the provider URL's substituted values and
/// for the OAuth token request's form body (`application/x-www-form-urlencoded`).
enum PercentEncoding {
    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    /// RFC 3986 unreserved: ALPHA DIGIT - . _ ~
    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// Appends `value` with every byte but the unreserved ones percent-encoded; with
    /// `encodingDots`, the dots too.
    static func append(_ value: String, encodingDots: Bool = false, to out: inout [UInt8]) {
        for byte in value.utf8 {
            if isUnreserved(byte) && !(encodingDots && byte == UInt8(ascii: ".")) {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0x0F)])
            }
        }
    }
}
