import FleetTokenProxy

/// `AWSCredentialsAnswer.parse` over any bytes the instance metadata service might answer for a
/// role's credentials (docs/CONTRACT.md §4a). Promises: accepted credentials are the answer's
/// own `AccessKeyId`, `SecretAccessKey` and `Token` (none when it has none), each 1 to 4096
/// visible ASCII bytes (they go into header fields); an answer whose `Code` is not `Success` is
/// refused; the description shows neither the secret nor the token; a refusal repeats neither
/// (16 bytes or more).
public enum AWSCredentialsAnswerInvariant: ParserInvariant {
    public static let name = "aws-credentials-answer"

    public static func check(_ input: UnsafeRawBufferPointer) throws(InvariantViolation) {
        let bytes = Array(input)
        let members = jsonMembers(bytes)
        switch AWSCredentialsAnswer.parse(bytes, from: "the AWS metadata service") {
        case .success(let credentials): try checkAccepted(credentials, answer: members)
        case .failure(let failure): try checkRefusal(failure.message, answer: members)
        }
    }

    static func checkAccepted(_ credentials: SigV4.Credentials, answer members: [String: JSONish]) throws(InvariantViolation) {
        try expect(members["Code"] == nil || members["Code"]?.stringValue == "Success", "accepted an answer whose Code is not Success")
        try expect(credentials.accessKeyID == members["AccessKeyId"]?.stringValue, "the key id is not the answer's")
        try expect(credentials.secretAccessKey == members["SecretAccessKey"]?.stringValue, "the secret is not the answer's")
        try expect(credentials.sessionToken == members["Token"]?.stringValue, "the session token is not the answer's")
        for value in [credentials.accessKeyID, credentials.secretAccessKey] + (credentials.sessionToken.map { [$0] } ?? []) {
            try expect((1...4096).contains(value.utf8.count) && value.utf8.allSatisfy { $0 >= 0x21 && $0 <= 0x7E },
                       "accepted a value that is not 1 to 4096 visible ASCII bytes")
        }
        try checkDescription(credentials)
    }

    /// Described the same whatever the secret and the session token are.
    static func checkDescription(_ credentials: SigV4.Credentials,
                                 describedBy describe: (SigV4.Credentials) -> String = { $0.description }) throws(InvariantViolation) {
        var other = credentials
        other.secretAccessKey += "x"
        other.sessionToken = (credentials.sessionToken ?? "") + "y"
        try expect(describe(credentials) == describe(other), "the description shows the secret or the session token")
    }

    static func checkRefusal(_ message: String, answer members: [String: JSONish]) throws(InvariantViolation) {
        for name in ["SecretAccessKey", "Token"] {
            guard let value = members[name]?.stringValue, value.utf8.count >= 16 else { continue }
            try expect(!message.contains(value), "a refusal repeats the \(name)")
        }
    }
}
