/// Validation of Fleet Engine entity ids (docs/CONTRACT.md §2): 1–64 Unicode characters, none of
/// `/ : \ ? #` and no control characters. Provider ids are checked by the same rule.
///
/// "Characters" are counted as Unicode scalars (code points), not as Swift `Character`s
/// (grapheme clusters): scalar counts are what a server counting code points sees, they do
/// not change between Unicode versions, and they can be counted in one pass over UTF-8 bytes.
/// So `"e\u{301}"` (e + combining acute) is two characters here.
enum EntityID {
    /// The longest id Fleet Engine accepts, in Unicode scalars.
    package static let maxLength = 64

    /// True when `id` may name a Fleet Engine entity (docs/CONTRACT.md §2).
    static func isValid(_ id: String) -> Bool {
        problem(with: id) == nil
    }

    /// The first problem found with `id`, or nil when it is valid.
    static func problem(with id: String) -> Problem? {
        var id = id
        return id.withUTF8 { problem(utf8: $0) }
    }

    /// Why an id is not valid; `description` completes "vehicle id ... ".
    enum Problem: Equatable, Sendable, CustomStringConvertible {
        case empty
        case tooLong
        case forbiddenCharacter(Unicode.Scalar)
        case controlCharacter

        var description: String {
            switch self {
            case .empty: return "is empty"
            case .tooLong: return "is longer than \(EntityID.maxLength) characters"
            case .forbiddenCharacter(let c): return "contains '\(c)' (ids may not contain / : \\ ? #)"
            case .controlCharacter: return "contains a control character"
            }
        }
    }

    /// The first problem found with the UTF-8 bytes of an id (valid UTF-8: they come from a
    /// Swift string).
    ///
    /// One pass over the UTF-8 bytes: the string is already valid UTF-8, so a scalar starts at
    /// every byte that is not a continuation byte (10xxxxxx). Control characters are the
    /// general category Cc: U+0000–U+001F, U+007F and U+0080–U+009F (C1, encoded C2 80–C2 9F).
    static func problem(utf8 bytes: UnsafeBufferPointer<UInt8>) -> Problem? {
        var scalars = 0
        var afterC2 = false
        for byte in bytes {
            if byte < 0x80 {
                switch byte {
                case 0x00..<0x20, 0x7F:
                    return .controlCharacter
                case UInt8(ascii: "/"), UInt8(ascii: ":"), UInt8(ascii: "\\"), UInt8(ascii: "?"), UInt8(ascii: "#"):
                    return .forbiddenCharacter(Unicode.Scalar(byte))
                default:
                    break
                }
                scalars += 1
                afterC2 = false
            } else if byte & 0xC0 == 0x80 {
                if afterC2 && byte <= 0x9F { return .controlCharacter }
                afterC2 = false
            } else {
                scalars += 1
                afterC2 = byte == 0xC2
            }
            // Stop early: a huge id costs no more than a 65-character one.
            if scalars > maxLength { return .tooLong }
        }
        return scalars == 0 ? .empty : nil
    }
}
