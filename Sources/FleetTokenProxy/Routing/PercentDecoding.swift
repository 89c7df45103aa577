/// Percent-decoding (RFC 3986 §2.1) of request path segments and query components.
///
/// Works on UTF-8 bytes without Foundation: it runs for every routed call.
package enum PercentDecoding {
    /// Decodes `%XX` escapes; returns nil for a malformed escape (`%`, `%4`, `%zz`) or when the
    /// decoded bytes are not valid UTF-8. With `plusAsSpace` (query components,
    /// `application/x-www-form-urlencoded`) a literal `+` means a space; an encoded `%2B` stays `+`.
    package static func decode<S: StringProtocol>(_ s: S, plusAsSpace: Bool = false) -> String? {
        if let decoded = s.utf8.withContiguousStorageIfAvailable({ decode(utf8: $0, plusAsSpace: plusAsSpace) }) {
            return decoded
        }
        return Array(s.utf8).withUnsafeBufferPointer { decode(utf8: $0, plusAsSpace: plusAsSpace) }
    }

    /// The same for the bytes of a Swift string (so already valid UTF-8), as the router holds them.
    static func decode(utf8 bytes: UnsafeBufferPointer<UInt8>, plusAsSpace: Bool) -> String? {
        // Most segments hold no escape at all: copy them without a second pass.
        guard bytes.contains(where: { $0 == percent || (plusAsSpace && $0 == plus) }) else {
            return String(decoding: bytes, as: UTF8.self)
        }

        var malformed = false
        // Decoding only shrinks text, so the input's length is enough room.
        let decoded = String(unsafeUninitializedCapacity: bytes.count) { out in
            var written = 0
            var sawNonASCII = false
            var i = 0
            while i < bytes.count {
                var byte = bytes[i]
                if byte == percent {
                    guard i + 2 < bytes.count, let high = hexValue(bytes[i + 1]), let low = hexValue(bytes[i + 2]) else {
                        malformed = true
                        return 0
                    }
                    byte = high << 4 | low
                    i += 3
                } else {
                    if plusAsSpace && byte == plus { byte = space }
                    i += 1
                }
                if byte >= 0x80 { sawNonASCII = true }
                out[written] = byte
                written += 1
            }
            // The String initializer would silently repair bad sequences into U+FFFD, and two
            // different wire ids must never collapse into one decoded id, so refuse instead.
            if sawNonASCII && !isValidUTF8(UnsafeBufferPointer(rebasing: out[..<written])) {
                malformed = true
                return 0
            }
            return written
        }
        return malformed ? nil : decoded
    }

    /// Strict UTF-8 check (no overlong forms, surrogates or values above U+10FFFF).
    static func isValidUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var iterator = bytes.makeIterator()
        var codec = UTF8()
        while true {
            switch codec.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }

    @inline(__always)
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte &- UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte &- UInt8(ascii: "A") &+ 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte &- UInt8(ascii: "a") &+ 10
        default: return nil
        }
    }

    private static let percent = UInt8(ascii: "%")
    private static let plus = UInt8(ascii: "+")
    private static let space = UInt8(ascii: " ")
}
