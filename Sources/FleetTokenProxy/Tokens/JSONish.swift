/// A JSON value kept as data, so the provider's answer and a token's claims can be read
/// without Foundation's `JSONSerialization` (which would load all of Foundation and ICU into
/// the sidecar: about 7 MB of its idle memory) or its Codable decoders (about 350k
/// instructions per JWT, on the path of every cold miss).
package enum JSONish: Sendable, Equatable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case null
    case array([JSONish])
    case object([String: JSONish])

    /// The JSON text `bytes` (UTF-8) as a value; nil when it is not JSON (`JSONReader`). A
    /// scalar is a JSON text too: callers that want an object say so.
    package static func parse(_ bytes: [UInt8]) -> JSONish? {
        bytes.withUnsafeBufferPointer { JSONReader.parse($0) }
    }

    /// The value as JSON text, object members sorted by name, slashes not escaped, whole
    /// numbers written as integers; "null" if it holds a number JSON cannot write (NaN, ±∞).
    package var jsonText: String {
        var text: [UInt8] = []
        guard write(to: &text) else { return "null" }
        return String(decoding: text, as: UTF8.self)
    }

    private func write(to text: inout [UInt8]) -> Bool {
        switch self {
        case .string(let string):
            Self.write(string, to: &text)
        case .number(let number):
            guard number.isFinite else { return false }
            // Whole numbers as integers, the way a provider writes an epoch second.
            if number == number.rounded(), abs(number) < 1e15 {
                text.append(contentsOf: String(Int64(number)).utf8)
            } else {
                text.append(contentsOf: number.description.utf8)
            }
        case .bool(let bool):
            text.append(contentsOf: (bool ? "true" : "false").utf8)
        case .null:
            text.append(contentsOf: "null".utf8)
        case .array(let elements):
            text.append(UInt8(ascii: "["))
            for (offset, element) in elements.enumerated() {
                if offset > 0 { text.append(UInt8(ascii: ",")) }
                guard element.write(to: &text) else { return false }
            }
            text.append(UInt8(ascii: "]"))
        case .object(let members):
            text.append(UInt8(ascii: "{"))
            for (offset, name) in members.keys.sorted().enumerated() {
                if offset > 0 { text.append(UInt8(ascii: ",")) }
                Self.write(name, to: &text)
                text.append(UInt8(ascii: ":"))
                guard members[name]!.write(to: &text) else { return false }
            }
            text.append(UInt8(ascii: "}"))
        }
        return true
    }

    /// A string token: quote and backslash escaped, control characters as `\n`-style
    /// escapes or `\u00XX`, everything else (slashes, non-ASCII) as it is.
    private static func write(_ string: String, to text: inout [UInt8]) {
        text.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                text.append(UInt8(ascii: "\\"))
                text.append(byte)
            case 0x08: text.append(contentsOf: #"\b"#.utf8)
            case 0x0C: text.append(contentsOf: #"\f"#.utf8)
            case 0x0A: text.append(contentsOf: #"\n"#.utf8)
            case 0x0D: text.append(contentsOf: #"\r"#.utf8)
            case 0x09: text.append(contentsOf: #"\t"#.utf8)
            case 0x00..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                text.append(contentsOf: #"\u00"#.utf8)
                text.append(hex[Int(byte >> 4)])
                text.append(hex[Int(byte & 0x0F)])
            default:
                text.append(byte)
            }
        }
        text.append(UInt8(ascii: "\""))
    }
}

extension JSONish {
    /// The string, if the value is one.
    package var stringValue: String? {
        if case .string(let string) = self { return string }
        return nil
    }

    /// An array or an object: a JSON text as RFC 4627 had it, and as a provider answers.
    var isContainer: Bool {
        switch self {
        case .array, .object: return true
        case .string, .number, .bool, .null: return false
        }
    }

    /// The number, if the value is one (never a boolean).
    package var numberValue: Double? {
        if case .number(let number) = self { return number }
        return nil
    }
}
