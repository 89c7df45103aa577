/// Reads what a pluggable-auth executable answers (docs/CONTRACT.md §4a), on its standard
/// output or in its output file: `{"version": 1, "success": true, "token_type": "…:jwt" |
/// "…:id_token" | "…:saml2", "id_token" | "saml_response": "…", "expiration_time": EPOCH}`, or
/// `{"version": 1, "success": false, "code": "…", "message": "…"}`. An unsuccessful answer is a
/// refusal in the program's own words (403); anything else wrong is unusable (502). The token
/// is 1 to 16 KiB of visible ASCII and is never in a message.
package enum ExecutableResponse {
    /// The subject token and when it expires (epoch seconds), if the answer says.
    package struct Token: Sendable, Equatable, CustomStringConvertible {
        package var value: String
        package var expiresAt: Double?

        package var description: String { "subject token …\(TokenFingerprint.of(value))" }
    }

    static let maximumVersion = 1.0

    package static func parse(_ bytes: [UInt8], from source: String, wallNow: Double) -> Result<Token, ProxyFailure> {
        guard case .object(let members)? = JSONish.parse(bytes) else { return unusable("\(source) answer is not a JSON object") }
        guard let version = members["version"]?.numberValue, version >= 1, version <= maximumVersion else {
            return unusable("\(source) answer has no \"version\" this sidecar reads (1)")
        }
        guard case .bool(let success)? = members["success"] else { return unusable("\(source) answer has no \"success\" boolean") }
        guard success else {
            guard let code = members["code"]?.stringValue, let message = members["message"]?.stringValue else {
                return unusable("\(source) answer is unsuccessful without \"code\" and \"message\"")
            }
            return .failure(.providerRefused("\(source) answered unsuccessfully: \(AccessTokenAnswer.printable(code)): \(AccessTokenAnswer.printable(message))"))
        }
        var expiresAt: Double?
        if let value = members["expiration_time"] {
            guard let number = value.numberValue, number.isFinite else { return unusable("\(source) answer's \"expiration_time\" is not a number") }
            guard number > wallNow else { return unusable("\(source) answer's token has expired") }
            expiresAt = number
        }
        let member: String
        switch members["token_type"]?.stringValue {
        case "urn:ietf:params:oauth:token-type:jwt", "urn:ietf:params:oauth:token-type:id_token": member = "id_token"
        case "urn:ietf:params:oauth:token-type:saml2": member = "saml_response"
        default: return unusable("\(source) answer's \"token_type\" is not jwt, id_token or saml2")
        }
        guard let token = members[member]?.stringValue, !token.isEmpty, token.utf8.count <= SubjectTokenContent.maximumLength,
              token.utf8.allSatisfy(ASCII.isVisible)
        else { return unusable("\(source) answer's \"\(member)\" is missing, longer than \(SubjectTokenContent.maximumLength) bytes or not visible ASCII") }
        return .success(Token(value: token, expiresAt: expiresAt))
    }

    private static func unusable(_ message: String) -> Result<Token, ProxyFailure> {
        .failure(.providerAnswerUnusable(message))
    }
}
