import Foundation

/// The JSON text of the stand-ins' answers and JWTs: what `JSONSerialization` writes with
/// `.sortedKeys` and `.withoutEscapingSlashes`, byte for byte, written directly for the shapes
/// the stand-ins build. Foundation's writer spends most of a token answer's CPU (bridging every
/// value, sorting keys with a locale-aware compare), which made the stand-in provider, not the
/// sidecar, the limit of `scripts/bench`'s warm-ups and cold-miss row.
///
/// The direct path takes objects whose keys are ASCII letters and underscores (ordered as
/// Foundation's case-insensitive, numeric, locale compare orders them: by the lowercased key,
/// `_` before the letters) and whose values are strings without control characters, integers, and arrays and objects
/// of those. Anything else goes to `JSONSerialization`, so the bytes never differ.
enum StandInJSON {
    static func bytes(_ object: [String: Any]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        if write(object, to: &out) { return out }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return Array(data)
    }

    static func text(_ object: [String: Any]) -> String {
        String(decoding: bytes(object), as: UTF8.self)
    }

    /// Appends `value`'s JSON; false when it is not a shape the direct path takes.
    private static func write(_ value: Any, to out: inout [UInt8]) -> Bool {
        switch value {
        case let string as String:
            return write(string: string, to: &out)
        case let number as Int:
            out += Array(String(number).utf8)
            return true
        case let object as [String: Any]:
            out.append(UInt8(ascii: "{"))
            guard object.keys.allSatisfy(isPlainKey) else { return false }
            let keys = object.keys.sorted { ($0.lowercased(), $0) < ($1.lowercased(), $1) }
            for (index, key) in keys.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                guard write(string: key, to: &out) else { return false }
                out.append(UInt8(ascii: ":"))
                guard write(object[key]!, to: &out) else { return false }
            }
            out.append(UInt8(ascii: "}"))
            return true
        case let array as [Any]:
            out.append(UInt8(ascii: "["))
            for (index, element) in array.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                guard write(element, to: &out) else { return false }
            }
            out.append(UInt8(ascii: "]"))
            return true
        default:
            return false
        }
    }

    private static func isPlainKey(_ key: String) -> Bool {
        key.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || byte == UInt8(ascii: "_")
        }
    }

    /// A quoted string: `"` and `\` escaped; false for a control character (Foundation's own
    /// escapes for those are left to it).
    private static func write(string: String, to out: inout [UInt8]) -> Bool {
        out.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            if byte < 0x20 || byte == 0x7F { return false }
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { out.append(UInt8(ascii: "\\")) }
            out.append(byte)
        }
        out.append(UInt8(ascii: "\""))
        return true
    }
}
