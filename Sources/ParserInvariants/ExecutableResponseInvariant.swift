import FleetTokenProxy

/// `ExecutableResponse.parse` over any bytes a pluggable-auth program might print or leave in
/// its output file (docs/CONTRACT.md §4a). Promises: an accepted answer says `version` 1 and
/// `success` true; its token is the answer's own `id_token` (types jwt and id_token) or
/// `saml_response` (saml2), 1 to 16384 visible ASCII bytes; its expiry is the answer's
/// `expiration_time`, after now, or none when the answer has none; a refusal's message is
/// bounded, and never repeats a token the answer holds (16 bytes or more) unless the program
/// put it in its own unsuccessful answer's `code` or `message`, which are shown cut short.
public enum ExecutableResponseInvariant: ParserInvariant {
    public static let name = "executable-response"
    static let wallNow: Double = 1_767_225_600

    public static func check(_ input: UnsafeRawBufferPointer) throws(InvariantViolation) {
        let bytes = Array(input)
        let members = jsonMembers(bytes)
        switch ExecutableResponse.parse(bytes, from: "the executable /bin/t", wallNow: wallNow) {
        case .success(let token): try checkAccepted(token, answer: members)
        case .failure(let failure): try checkRefusal(failure.message, answer: members)
        }
    }

    static func checkAccepted(_ token: ExecutableResponse.Token, answer members: [String: JSONish]) throws(InvariantViolation) {
        try expect(members["version"]?.numberValue == 1 && members["success"] == .bool(true), "accepted an answer that is not version 1 and successful")
        let member: String
        switch members["token_type"]?.stringValue {
        case "urn:ietf:params:oauth:token-type:jwt", "urn:ietf:params:oauth:token-type:id_token": member = "id_token"
        case "urn:ietf:params:oauth:token-type:saml2": member = "saml_response"
        default: throw InvariantViolation("accepted an answer of another token type")
        }
        try expect(token.value == members[member]?.stringValue, "the token is not the answer's \(member)")
        try expect((1...16_384).contains(token.value.utf8.count) && token.value.utf8.allSatisfy { $0 >= 0x21 && $0 <= 0x7E },
                   "accepted a token that is not 1 to 16384 visible ASCII bytes")
        try expect(token.expiresAt == members["expiration_time"]?.numberValue, "the expiry is not the answer's expiration_time")
        if let expiresAt = token.expiresAt { try expect(expiresAt > wallNow, "accepted an expired token") }
    }

    static func checkRefusal(_ message: String, answer members: [String: JSONish]) throws(InvariantViolation) {
        try expect(message.utf8.count <= 600, "a refusal longer than two cut texts and its frame")
        guard members["success"] != .bool(false) else { return }
        for member in ["id_token", "saml_response"] {
            guard let token = members[member]?.stringValue, token.utf8.count >= 16 else { continue }
            try expect(!message.contains(token), "a refusal repeats the \(member)")
        }
    }
}
