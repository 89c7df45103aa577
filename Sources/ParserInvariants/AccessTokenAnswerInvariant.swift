import FleetTokenProxy

/// `AccessTokenAnswer` over any bytes the OAuth token endpoint or the metadata server might
/// answer (docs/CONTRACT.md §4a): both send RFC 6749 §5.1's shape, read by the one parser, so
/// the seeds hold both. Promises: an accepted token is the body's own `access_token`, 1 to
/// 8192 visible ASCII bytes (it goes into an `Authorization` header), its lifetime the body's
/// `expires_in` and within a day, and its description depends on it only through its
/// fingerprint (a one-byte token may well be a letter of the description; what matters is
/// that another token would be described the same way); a refusal's text is printable ASCII
/// and bounded (it reaches a client's error and a log line).
public enum AccessTokenAnswerInvariant: ParserInvariant {
    public static let name = "access-token-answer"

    public static func check(_ input: UnsafeRawBufferPointer) throws(InvariantViolation) {
        let bytes = Array(input)
        let members = jsonMembers(bytes)
        if case .success(let token) = AccessTokenAnswer.parse(bytes, from: "the OAuth token endpoint") {
            try checkAccepted(token, body: members)
        }
        if let said = AccessTokenAnswer.refusal(bytes) {
            try checkRefusal(said)
        }
    }

    static func checkAccepted(_ token: AccessToken, body members: [String: JSONish]) throws(InvariantViolation) {
        try expect(token.value == members["access_token"]?.stringValue, "the token is not the body's access_token")
        try expect((1...8192).contains(token.value.utf8.count) && token.value.utf8.allSatisfy { $0 >= 0x21 && $0 <= 0x7E },
                   "accepted a token that is not 1 to 8192 visible ASCII bytes")
        try expect(token.lifetime == members["expires_in"]?.numberValue, "the lifetime is not the body's expires_in")
        try expect(token.lifetime > 0 && token.lifetime <= 86_400, "accepted a lifetime outside (0, 86400]")
        try checkDescription(token)
    }

    /// Described the same as a token of another value and length, once each description's
    /// fingerprint is taken out: nothing of the value but its fingerprint is shown.
    /// (`describe` is there so that a test can show the check catching a leak.)
    static func checkDescription(_ token: AccessToken,
                                 describedBy describe: (AccessToken) -> String = { $0.description }) throws(InvariantViolation) {
        let other = AccessToken(value: token.value + "x", lifetime: token.lifetime)
        func withoutFingerprint(_ token: AccessToken) -> String {
            describe(token).replacing(TokenFingerprint.of(token.value), with: "")
        }
        try expect(withoutFingerprint(token) == withoutFingerprint(other), "the description shows the token")
    }

    /// Printable ASCII (and the `…` of a text cut short), at most two cut texts and a separator.
    static func checkRefusal(_ said: String) throws(InvariantViolation) {
        let ellipsis = Array("…".utf8)
        var rest = Array(said.utf8)
        while let range = rest.firstRange(of: ellipsis) { rest.removeSubrange(range) }
        try expect(rest.allSatisfy { $0 >= 0x20 && $0 <= 0x7E }, "a refusal's text is not printable ASCII")
        try expect(said.count <= 2 * 201 + 2, "a refusal's text is longer than two cut texts")
    }
}
