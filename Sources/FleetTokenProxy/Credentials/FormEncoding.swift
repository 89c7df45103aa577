/// `application/x-www-form-urlencoded` (the OAuth token request's body, RFC 6749 §4.1.3):
/// everything but unreserved characters percent-encoded.
enum FormEncoding {
    static func body(_ pairs: [(String, String)]) -> [UInt8] {
        var out: [UInt8] = []
        for (index, (name, value)) in pairs.enumerated() {
            if index > 0 { out.append(UInt8(ascii: "&")) }
            encode(name, into: &out)
            out.append(UInt8(ascii: "="))
            encode(value, into: &out)
        }
        return out
    }

    /// One name or value, percent-encoded (also for a URL's query).
    static func component(_ text: String) -> [UInt8] {
        var out: [UInt8] = []
        encode(text, into: &out)
        return out
    }

    private static func encode(_ text: String, into out: inout [UInt8]) {
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(byte)
            default:
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            }
        }
    }
}
