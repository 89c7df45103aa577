import FleetTokenProxy

/// `GenerateAccessTokenAnswer.parse` over any bytes IAM's `generateAccessToken` might answer
/// (docs/CONTRACT.md §4a). Promises: an accepted token is the body's own `accessToken`, 1 to
/// 8192 visible ASCII bytes (it goes into an `Authorization` header); it lives exactly until the
/// body's `expireTime`, which is after now and at most 12 hours (and a minute) ahead; its
/// description shows nothing of it but its fingerprint.
public enum GenerateAccessTokenAnswerInvariant: ParserInvariant {
    public static let name = "generate-access-token-answer"
    /// A fixed "now" so the seeds' `expireTime`s keep their meaning: 2026-01-01T00:00:00Z.
    static let wallNow: Double = 1_767_225_600

    public static func check(_ input: UnsafeRawBufferPointer) throws(InvariantViolation) {
        let bytes = Array(input)
        if case .success(let token) = GenerateAccessTokenAnswer.parse(bytes, from: "IAM generateAccessToken", wallNow: wallNow) {
            try checkAccepted(token, body: jsonMembers(bytes))
        }
    }

    static func checkAccepted(_ token: AccessToken, body members: [String: JSONish]) throws(InvariantViolation) {
        try expect(token.value == members["accessToken"]?.stringValue, "the token is not the body's accessToken")
        try expect((1...8192).contains(token.value.utf8.count) && token.value.utf8.allSatisfy { $0 >= 0x21 && $0 <= 0x7E },
                   "accepted a token that is not 1 to 8192 visible ASCII bytes")
        let expires = members["expireTime"]?.stringValue.flatMap(epochSeconds)
        try expect(expires != nil && token.lifetime == expires! - wallNow, "the lifetime is not what is left until expireTime")
        try expect(token.lifetime > 0 && token.lifetime <= 43_260, "accepted a lifetime outside (0, 12 h + 1 min]")
        try AccessTokenAnswerInvariant.checkDescription(token)
    }

    /// `YYYY-MM-DDTHH:MM:SS[.fff](Z|±HH:MM)`, read here on its own so the check does not
    /// trust the parser's reading of the date.
    static func epochSeconds(_ text: String) -> Double? {
        let bytes = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= bytes.count, bytes[range].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            return bytes[range].reduce(0) { $0 * 10 + Int($1 - 0x30) }
        }
        guard bytes.count >= 20, let year = number(0..<4), bytes[4] == 0x2D, let month = number(5..<7), bytes[7] == 0x2D,
              let day = number(8..<10), [0x54, 0x74, 0x20].contains(bytes[10]), let hour = number(11..<13), bytes[13] == 0x3A,
              let minute = number(14..<16), bytes[16] == 0x3A, let second = number(17..<19),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        var fraction = 0.0
        if bytes[index] == 0x2E {
            var scale = 0.1
            index += 1
            let start = index
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                fraction += Double(bytes[index] - 0x30) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        guard index < bytes.count else { return nil }
        var offset = 0
        switch bytes[index] {
        case 0x5A, 0x7A:
            guard index + 1 == bytes.count else { return nil }
        case 0x2B, 0x2D:
            guard index + 6 == bytes.count, let h = number(index + 1..<index + 3), bytes[index + 3] == 0x3A, let m = number(index + 4..<index + 6),
                  h < 24, m < 60
            else { return nil }
            offset = (h * 3600 + m * 60) * (bytes[index] == 0x2B ? 1 : -1)
        default:
            return nil
        }
        // Days from 1970-01-01 to the date (Howard Hinnant's days_from_civil).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        return Double(days * 86_400 + hour * 3600 + minute * 60 + second - offset) + fraction
    }
}
