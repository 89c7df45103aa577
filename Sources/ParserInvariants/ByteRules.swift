/// The byte rules of RFC 9110 and docs/CONTRACT.md §2 written out again, plainly, so an invariant does not
/// check a parser against the parser's own (bit-twiddled) tables.
enum ByteRules {
    /// tchar: `!#$%&'*+-.^_`|~`, digits, letters.
    static func isTokenByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "A")...UInt8(ascii: "Z"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(b)
        }
    }

    static func isToken<S: StringProtocol>(_ s: S) -> Bool { !s.isEmpty && s.utf8.allSatisfy(isTokenByte) }

    /// A field value as relayed: no CTL but HTAB, no whitespace at either end.
    static func isFieldValue<S: StringProtocol>(_ s: S) -> Bool {
        let bytes = Array(s.utf8)
        if let first = bytes.first, first == 0x20 || first == 0x09 { return false }
        if let last = bytes.last, last == 0x20 || last == 0x09 { return false }
        return bytes.allSatisfy { ($0 >= 0x20 && $0 != 0x7F) || $0 == 0x09 }
    }

    /// docs/CONTRACT.md §2: 1–64 Unicode scalars, none of `/ : \ ? #`, no control character (Cc).
    static func isEntityID(_ id: String) -> Bool {
        let scalars = id.unicodeScalars
        guard !scalars.isEmpty, scalars.count <= 64 else { return false }
        return scalars.allSatisfy { c in
            !"/:\\?#".unicodeScalars.contains(c) && !(c.value < 0x20 || (0x7F...0x9F).contains(c.value))
        }
    }
}
