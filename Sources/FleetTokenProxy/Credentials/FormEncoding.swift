/// `application/x-www-form-urlencoded` (the OAuth token request's body, RFC 6749 §4.1.3):
/// everything but unreserved characters percent-encoded (`PercentEncoding`).
enum FormEncoding {
    static func body(_ pairs: [(String, String)]) -> [UInt8] {
        var out: [UInt8] = []
        for (index, (name, value)) in pairs.enumerated() {
            if index > 0 { out.append(UInt8(ascii: "&")) }
            PercentEncoding.append(name, to: &out)
            out.append(UInt8(ascii: "="))
            PercentEncoding.append(value, to: &out)
        }
        return out
    }

    /// One name or value, percent-encoded (also for a URL's query).
    static func component(_ text: String) -> [UInt8] {
        var out: [UInt8] = []
        PercentEncoding.append(text, to: &out)
        return out
    }
}
