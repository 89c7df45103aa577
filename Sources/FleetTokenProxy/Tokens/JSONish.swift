#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A JSON value kept as data, so the provider's answer and a token's claims can be read
/// without Foundation's `JSONSerialization` (which would load all of Foundation and ICU into
/// the sidecar: about 7 MB of its idle memory).
public enum JSONish: Sendable, Equatable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case null
    case array([JSONish])
    case object([String: JSONish])

    /// The JSON text `bytes` (UTF-8) as a value; nil when it is not JSON. A scalar is a JSON
    /// text too: callers that want an object say so.
    public static func parse(_ bytes: [UInt8]) -> JSONish? {
        try? JSONDecoder().decode(JSONish.self, from: Data(bytes))
    }

    /// The value as JSON text, object members sorted by name and slashes not escaped.
    public var jsonText: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(self) else { return "null" }
        return String(decoding: data, as: UTF8.self)
    }
}

extension JSONish: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        // Bool before Double: the decoder keeps `true` and `1` apart, so a boolean never
        // reads as a number.
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let elements = try? container.decode([JSONish].self) {
            self = .array(elements)
        } else {
            self = .object(try container.decode([String: JSONish].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let string): try container.encode(string)
        case .number(let number):
            // Whole numbers as integers, the way a provider writes an epoch second.
            if number == number.rounded(), abs(number) < 1e15 {
                try container.encode(Int64(number))
            } else {
                try container.encode(number)
            }
        case .bool(let bool): try container.encode(bool)
        case .null: try container.encodeNil()
        case .array(let elements): try container.encode(elements)
        case .object(let members): try container.encode(members)
        }
    }
}

extension JSONish {
    /// The string, if the value is one.
    public var stringValue: String? {
        if case .string(let string) = self { return string }
        return nil
    }

    /// An array or an object: a JSON text as RFC 4627 had it, and as a provider answers.
    public var isContainer: Bool {
        switch self {
        case .array, .object: return true
        case .string, .number, .bool, .null: return false
        }
    }

    /// The number, if the value is one (never a boolean).
    public var numberValue: Double? {
        if case .number(let number) = self { return number }
        return nil
    }
}
