import FleetTokenProxy

/// `SubjectTokenContent.parse` over any bytes a subject token file or URL might hold
/// (docs/CONTRACT.md §4a), read as text and as JSON with the token in `id_token`. Promises: an
/// accepted token is 1 to 16384 visible ASCII bytes (it goes into STS's form); as text it is the
/// bytes themselves less a trailing line end; as JSON it is the member's own value; and a
/// refusal never repeats the bytes (a subject token is the workload's credential).
public enum SubjectTokenInvariant: ParserInvariant {
    public static let name = "subject-token"
    static let location = "the subject token file /run/token"

    public static func check(_ input: UnsafeRawBufferPointer) throws(InvariantViolation) {
        let bytes = Array(input)
        try checkText(bytes, SubjectTokenContent.parse(bytes, format: .text, from: location))
        try checkJSON(bytes, SubjectTokenContent.parse(bytes, format: .json(field: "id_token"), from: location))
    }

    static func checkText(_ bytes: [UInt8], _ result: Result<String, ProxyFailure>) throws(InvariantViolation) {
        switch result {
        case .success(let token):
            try checkToken(token)
            var rest = Array(bytes.dropFirst(token.utf8.count))
            try expect(Array(bytes.prefix(token.utf8.count)) == Array(token.utf8), "the token is not the bytes")
            rest.removeAll { $0 == 0x0A || $0 == 0x0D || $0 == 0x20 || $0 == 0x09 }
            try expect(rest.isEmpty, "the token leaves out more than a trailing line end")
        case .failure(let failure):
            try checkRefusal(failure, of: bytes)
        }
    }

    static func checkJSON(_ bytes: [UInt8], _ result: Result<String, ProxyFailure>) throws(InvariantViolation) {
        switch result {
        case .success(let token):
            try checkToken(token)
            try expect(token == jsonMembers(bytes)["id_token"]?.stringValue, "the token is not the member's")
        case .failure(let failure):
            try checkRefusal(failure, of: bytes)
        }
    }

    static func checkToken(_ token: String) throws(InvariantViolation) {
        try expect((1...16_384).contains(token.utf8.count) && token.utf8.allSatisfy { $0 >= 0x21 && $0 <= 0x7E },
                   "accepted a token that is not 1 to 16384 visible ASCII bytes")
    }

    /// The message is the location and what is wrong; bytes long enough to be a token (16 or
    /// more) never appear in it.
    static func checkRefusal(_ failure: ProxyFailure, of bytes: [UInt8]) throws(InvariantViolation) {
        let message = Array(failure.message.utf8)
        var shown = bytes
        while let last = shown.last, last == 0x0A || last == 0x0D || last == 0x20 { shown.removeLast() }
        guard shown.count >= 16 else { return }
        try expect(message.firstRange(of: shown) == nil, "a refusal repeats the subject token")
    }
}
