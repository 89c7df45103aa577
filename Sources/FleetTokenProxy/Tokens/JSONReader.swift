/// A strict RFC 8259 reader over UTF-8 bytes, for the provider's answer and a JWT's claims:
/// one pass over the bytes, one `String` built per string token. It takes nothing a strict
/// reader would refuse (no trailing commas, comments, leading zeros, NaN, lone surrogates,
/// control characters in strings, invalid UTF-8) and bounds nesting, so hostile input cannot
/// exhaust the stack. Of duplicate object members the last wins, as with the decoders used
/// here before.
struct JSONReader {
    /// Arrays and objects nested deeper than this are refused: a token provider's answer and
    /// a JWT's claims are two or three levels deep, and recursion must stay shallow.
    static let maximumDepth = 64

    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    private var depth = 0

    private init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// The JSON text `bytes` as a value (a scalar is a JSON text too); nil when it is not JSON.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> JSONish? {
        var reader = JSONReader(bytes)
        reader.skipWhitespace()
        guard let value = reader.value() else { return nil }
        reader.skipWhitespace()
        return reader.index == bytes.count ? value : nil
    }

    private var current: UInt8? {
        index < bytes.count ? bytes[index] : nil
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// Consumes `literal` if the input continues with it.
    private mutating func consume(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - index >= count else { return false }
        let start = literal.utf8Start
        for offset in 0..<count where bytes[index + offset] != start[offset] {
            return false
        }
        index += count
        return true
    }

    private mutating func value() -> JSONish? {
        guard let byte = current else { return nil }
        switch byte {
        case UInt8(ascii: "{"): return object()
        case UInt8(ascii: "["): return array()
        case UInt8(ascii: "\""): return string().map(JSONish.string)
        case UInt8(ascii: "t"): return consume("true") ? .bool(true) : nil
        case UInt8(ascii: "f"): return consume("false") ? .bool(false) : nil
        case UInt8(ascii: "n"): return consume("null") ? .null : nil
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number().map(JSONish.number)
        default: return nil
        }
    }

    private mutating func object() -> JSONish? {
        guard depth < Self.maximumDepth else { return nil }
        depth += 1
        defer { depth -= 1 }
        index += 1  // {
        var members: [String: JSONish] = [:]
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        // Room for a JWT's claims at once: growing 1, 2, 4, 8 rehashed every member each time.
        members.reserveCapacity(8)
        while true {
            guard current == UInt8(ascii: "\""), let name = string() else { return nil }
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { return nil }
            index += 1
            skipWhitespace()
            guard let member = value() else { return nil }
            members[name] = member
            guard let more = another(before: UInt8(ascii: "}")) else { return nil }
            if !more { return .object(members) }
        }
    }

    private mutating func array() -> JSONish? {
        guard depth < Self.maximumDepth else { return nil }
        depth += 1
        defer { depth -= 1 }
        index += 1  // [
        var elements: [JSONish] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            guard let element = value() else { return nil }
            elements.append(element)
            guard let more = another(before: UInt8(ascii: "]")) else { return nil }
            if !more { return .array(elements) }
        }
    }

    /// After an object's member or an array's element: true past a `,` (another must follow:
    /// no trailing comma), false past `closer` (the container ends), nil for anything else.
    private mutating func another(before closer: UInt8) -> Bool? {
        skipWhitespace()
        switch current {
        case UInt8(ascii: ",")?:
            index += 1
            skipWhitespace()
            return true
        case closer?:
            index += 1
            return false
        default:
            return nil
        }
    }

    /// A string token from its opening quote. Without escapes the bytes between the quotes
    /// become the String directly; with them, the unescaped bytes are gathered first.
    private mutating func string() -> String? {
        index += 1  // "
        let start = index
        // ASCII needs no validation: the generic `String(validating:)` costs more per call
        // (type metadata lookups) than a whole token's ASCII is to scan.
        var ascii = true
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let content = UnsafeBufferPointer(rebasing: bytes[start..<index])
                let text = ascii ? String(decoding: content, as: UTF8.self) : String(validating: content, as: UTF8.self)
                index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { return nil }
            if byte >= 0x80 { ascii = false }
            index += 1
        }
        guard index < bytes.count else { return nil }

        var unescaped = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return String(validating: unescaped, as: UTF8.self)
            case UInt8(ascii: "\\"):
                index += 1
                guard let escape = current else { return nil }
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): unescaped.append(escape)
                case UInt8(ascii: "b"): unescaped.append(0x08)
                case UInt8(ascii: "f"): unescaped.append(0x0C)
                case UInt8(ascii: "n"): unescaped.append(0x0A)
                case UInt8(ascii: "r"): unescaped.append(0x0D)
                case UInt8(ascii: "t"): unescaped.append(0x09)
                case UInt8(ascii: "u"):
                    guard let scalar = unicodeEscape(), let encoded = UTF8.encode(scalar) else { return nil }
                    unescaped.append(contentsOf: encoded)
                default:
                    return nil
                }
            default:
                guard byte >= 0x20 else { return nil }
                unescaped.append(byte)
                index += 1
            }
        }
        return nil
    }

    /// The scalar of `\uXXXX` (after the `u`), or of a surrogate pair `\uD8xx\uDCxx`; nil
    /// for a lone surrogate.
    private mutating func unicodeEscape() -> Unicode.Scalar? {
        guard let unit = hexQuad() else { return nil }
        switch unit {
        case 0xD800...0xDBFF:
            guard consume("\\u"), let low = hexQuad(), (0xDC00...0xDFFF).contains(low) else { return nil }
            return Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
        case 0xDC00...0xDFFF:
            return nil
        default:
            return Unicode.Scalar(unit)
        }
    }

    private mutating func hexQuad() -> UInt32? {
        guard bytes.count - index >= 4 else { return nil }
        var unit: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            unit = unit << 4 | UInt32(digit)
            index += 1
        }
        return unit
    }

    private mutating func digits() -> Int {
        let start = index
        while let byte = current, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
            index += 1
        }
        return index - start
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, as a finite Double.
    private mutating func number() -> Double? {
        let start = index
        if current == UInt8(ascii: "-") { index += 1 }
        let integerStart = index
        let integerDigits = digits()
        guard integerDigits > 0, integerDigits == 1 || bytes[integerStart] != UInt8(ascii: "0") else { return nil }
        var whole = true
        if current == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { return nil }
            whole = false
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { return nil }
            whole = false
        }
        // An epoch second and the like: fewer than 16 digits are exact in an Int64 and in a
        // Double, so the text need not go through the general conversion.
        if whole, integerDigits < 16 {
            var magnitude: Int64 = 0
            for byte in bytes[integerStart..<index] {
                magnitude = magnitude * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            return integerStart == start ? Double(magnitude) : -Double(magnitude)
        }
        // Beyond the range of a Double (1e999) is not a number the sidecar can use.
        guard let number = Double(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)),
              number.isFinite
        else { return nil }
        return number
    }
}
