/// Reads a provider's expiry field (docs/CONTRACT.md §4). Google's samples disagree on what the number
/// means, so it is read by size; a string may also be an RFC 3339 time.
package enum ExpiryValue {
    /// At or above this a number is epoch milliseconds (10¹² ms is September 2001).
    static let epochMillisecondsThreshold = 1e12
    /// At or above this a number is epoch seconds (10⁹ s is September 2001); below it,
    /// seconds from now (up to about 31 years ahead).
    static let epochSecondsThreshold = 1e9

    /// The absolute expiry in epoch seconds, or nil if `value` is none of: a JSON number, a
    /// string of decimal digits (with an optional fraction), an RFC 3339 date-time.
    /// Booleans, negative or non-finite numbers, and times before 1970 are not expiries.
    package static func absoluteExpiry(from value: JSONish, wallNow: Double) -> Double? {
        switch value {
        case .string(let text): return absoluteExpiry(fromText: text, wallNow: wallNow)
        case .number(let number): return bySize(number, wallNow: wallNow)
        // A JSON `true` would otherwise read as "one second from now".
        case .bool, .null, .array, .object: return nil
        }
    }

    /// The same for a Swift value: a `JSONish`, a string, or a number (an integer or a binary
    /// floating-point value, never a `Bool`); nil for anything else.
    package static func absoluteExpiry(from value: Any, wallNow: Double) -> Double? {
        switch value {
        case let json as JSONish: return absoluteExpiry(from: json, wallNow: wallNow)
        case let text as String: return absoluteExpiry(fromText: text, wallNow: wallNow)
        case is Bool: return nil
        case let number as any BinaryInteger: return bySize(Double(number), wallNow: wallNow)
        case let number as any BinaryFloatingPoint: return bySize(Double(number), wallNow: wallNow)
        default: return nil
        }
    }

    private static func absoluteExpiry(fromText text: String, wallNow: Double) -> Double? {
        if let number = decimalNumber(text) { return bySize(number, wallNow: wallNow) }
        // Before the epoch, as a negative number would be: no provider means that.
        return RFC3339.epochSeconds(text).flatMap { $0 >= 0 ? $0 : nil }
    }

    static func bySize(_ number: Double, wallNow: Double) -> Double? {
        guard number.isFinite, number >= 0 else { return nil }
        if number >= epochMillisecondsThreshold { return number / 1000 }
        if number >= epochSecondsThreshold { return number }
        return wallNow + number
    }

    /// `123` or `123.5`, nothing else (no sign, exponent or spaces).
    private static func decimalNumber(_ text: String) -> Double? {
        var digitsBeforePoint = 0
        var sawPoint = false
        var digitsAfterPoint = 0
        for c in text.utf8 {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                if sawPoint { digitsAfterPoint += 1 } else { digitsBeforePoint += 1 }
            case UInt8(ascii: ".") where !sawPoint:
                sawPoint = true
            default:
                return nil
            }
        }
        guard digitsBeforePoint > 0, !sawPoint || digitsAfterPoint > 0 else { return nil }
        return Double(text)
    }
}

/// RFC 3339 §5.6 `date-time`: `2026-11-22T10:00:00Z`, `2026-11-22T10:00:00.250+01:00`.
/// Hand-written so no locale or `DateFormatter` state is involved.
enum RFC3339 {
    static func epochSeconds(_ text: String) -> Double? {
        var reader = Reader(Array(text.utf8))
        guard let year = reader.digits(4), reader.skip("-"),
              let month = reader.digits(2), reader.skip("-"),
              let day = reader.digits(2),
              reader.skipAny("T", "t", " "),
              let hour = reader.digits(2), reader.skip(":"),
              let minute = reader.digits(2), reader.skip(":"),
              let second = reader.digits(2)
        else { return nil }

        var fraction = 0.0
        if reader.skip(".") {
            var scale = 0.1
            var count = 0
            while let digit = reader.digit() {
                fraction += Double(digit) * scale
                scale /= 10
                count += 1
            }
            guard count > 0 else { return nil }
        }

        var offsetSeconds = 0
        if reader.skipAny("Z", "z") {
            offsetSeconds = 0
        } else if let sign = reader.sign(), let offsetHour = reader.digits(2), reader.skip(":"),
                  let offsetMinute = reader.digits(2), offsetHour <= 23, offsetMinute <= 59 {
            offsetSeconds = sign * (offsetHour * 3600 + offsetMinute * 60)
        } else {
            return nil
        }
        guard reader.atEnd else { return nil }

        // Second 60 is a leap second; it reads as the first second of the next minute.
        guard (1...12).contains(month), (1...daysInMonth(month, year: year)).contains(day),
              hour <= 23, minute <= 59, second <= 60
        else { return nil }

        let days = daysFromCivil(year: year, month: month, day: day)
        let local = days * 86_400 + hour * 3600 + minute * 60 + second
        return Double(local - offsetSeconds) + fraction
    }

    /// Days from 1970-01-01 to the given proleptic Gregorian date. Counts in 400-year eras
    /// (146 097 days each) of years that start on March 1, so February's leap day is last.
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400                                    // 0...399
        let shiftedMonth = month > 2 ? month - 3 : month + 9             // March = 0
        let dayOfYear = (153 * shiftedMonth + 2) / 5 + day - 1           // 0...365
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468                        // 719 468: 0000-03-01 → 1970-01-01
    }

    static func daysInMonth(_ month: Int, year: Int) -> Int {
        switch month {
        case 2:
            let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
            return leap ? 29 : 28
        case 4, 6, 9, 11:
            return 30
        default:
            return 31
        }
    }

    private struct Reader {
        let bytes: [UInt8]
        var position = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { position == bytes.count }

        mutating func digit() -> Int? {
            guard position < bytes.count,
                  bytes[position] >= UInt8(ascii: "0"), bytes[position] <= UInt8(ascii: "9")
            else { return nil }
            defer { position += 1 }
            return Int(bytes[position] - UInt8(ascii: "0"))
        }

        mutating func digits(_ count: Int) -> Int? {
            var value = 0
            for _ in 0..<count {
                guard let d = digit() else { return nil }
                value = value * 10 + d
            }
            return value
        }

        mutating func skip(_ character: Unicode.Scalar) -> Bool {
            guard position < bytes.count, bytes[position] == UInt8(ascii: character) else { return false }
            position += 1
            return true
        }

        mutating func skipAny(_ characters: Unicode.Scalar...) -> Bool {
            for character in characters where skip(character) { return true }
            return false
        }

        /// +1 or -1 for a `+` or `-`, consuming it.
        mutating func sign() -> Int? {
            if skip("+") { return 1 }
            if skip("-") { return -1 }
            return nil
        }
    }
}
