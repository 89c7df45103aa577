/// The claims of a compact JWT that the sidecar reads, decoded but NOT verified: the provider
/// is trusted, and Fleet Engine verifies the signature. Used to bound a token's expiry by
/// `exp`, to learn its lifetime from `iat`, and to check which entities it names.
package struct JWTClaims: Sendable, Equatable {
    /// `exp` in epoch seconds.
    package var exp: Double?
    /// `iat` in epoch seconds.
    package var iat: Double?
    /// `aud` as a list, whether the token carries one string or an array.
    package var aud: [String]
    /// The Fleet Engine `authorization` claim as sent (`vehicleid`, `tripid`,
    /// `deliveryvehicleid`, `taskid`, `taskids`, `trackingid`); empty when absent.
    package var authorization: [String: JSONish]

    package init(exp: Double? = nil, iat: Double? = nil, aud: [String] = [], authorization: [String: JSONish] = [:]) {
        self.exp = exp
        self.iat = iat
        self.aud = aud
        self.authorization = authorization
    }

    /// The entity ids an `authorization` member names: one string, or an array of strings
    /// (`taskids`). Empty when the member is absent or of another shape.
    func authorizedIDs(_ member: String) -> [String] {
        switch authorization[member] {
        case .string(let id):
            return [id]
        case .array(let elements):
            return elements.compactMap { element in
                if case .string(let id) = element { return id }
                return nil
            }
        default:
            return []
        }
    }

    /// Decodes `header.payload.signature`. Nil when the token is not three base64url parts
    /// whose header and payload are JSON objects: then it is an opaque token.
    package static func decode(_ token: String) -> JWTClaims? {
        // Over the token's contiguous UTF-8 (a token read from JSON always has it): walking a
        // String's UTF8View byte by byte cost more than the rest of the decode.
        var token = token
        return token.withUTF8(decode)
    }

    private static func decode(_ token: UnsafeBufferPointer<UInt8>) -> JWTClaims? {
        let dot = UInt8(ascii: ".")
        guard let firstDot = token.firstIndex(of: dot),
              let secondDot = token[(firstDot + 1)...].firstIndex(of: dot),
              token[(secondDot + 1)...].firstIndex(of: dot) == nil,
              Base64URL.isValid(token[(secondDot + 1)...]),
              let headerBytes = Base64URL.decode(token[..<firstDot]),
              jsonObject(headerBytes) != nil,
              let payloadBytes = Base64URL.decode(token[(firstDot + 1)..<secondDot]),
              let payload = jsonObject(payloadBytes)
        else { return nil }

        var claims = JWTClaims()
        claims.exp = numericDate(payload["exp"])
        claims.iat = numericDate(payload["iat"])
        switch payload["aud"] {
        case .string(let audience):
            claims.aud = [audience]
        case .array(let audiences):
            claims.aud = audiences.compactMap { if case .string(let a) = $0 { return a } else { return nil } }
        default:
            break
        }
        if case .object(let authorization) = payload["authorization"] {
            claims.authorization = authorization
        }
        return claims
    }

    private static func jsonObject(_ bytes: [UInt8]) -> [String: JSONish]? {
        guard case .object(let members)? = JSONish.parse(bytes) else { return nil }
        return members
    }

    /// RFC 7519 NumericDate: a JSON number of seconds. Anything else is treated as absent.
    private static func numericDate(_ value: JSONish?) -> Double? {
        guard case .number(let seconds)? = value, seconds.isFinite else { return nil }
        return seconds
    }
}

/// RFC 4648 §5 base64url without padding, as JWTs use it.
package enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// `bytes` as unpadded base64url (RFC 7515 §2).
    package static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index < bytes.count {
            let remaining = bytes.count - index
            var n = UInt32(bytes[index]) << 16
            if remaining > 1 { n |= UInt32(bytes[index + 1]) << 8 }
            if remaining > 2 { n |= UInt32(bytes[index + 2]) }
            // 2, 3 or 4 characters for 1, 2 or 3 bytes.
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            if remaining > 1 { out.append(alphabet[Int(n >> 6 & 63)]) }
            if remaining > 2 { out.append(alphabet[Int(n & 63)]) }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The 6-bit value of a base64url character, or nil.
    private static func sextet(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return c - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return c - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): return 62
        case UInt8(ascii: "_"): return 63
        default: return nil
        }
    }

    static func isValid<C: Collection>(_ text: C) -> Bool where C.Element == UInt8 {
        text.count % 4 != 1 && text.allSatisfy { sextet($0) != nil }
    }

    /// Nil for an empty part, a character outside the alphabet, or an impossible length.
    package static func decode<C: Collection>(_ text: C) -> [UInt8]? where C.Element == UInt8 {
        guard !text.isEmpty, text.count % 4 != 1 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(text.count * 3 / 4)
        var buffer: UInt32 = 0
        var bits = 0
        for c in text {
            guard let value = sextet(c) else { return nil }
            buffer = (buffer << 6) | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        return output
    }
}
