/// An OAuth 2.0 access token from Application Default Credentials (docs/CONTRACT.md §4a) and
/// when it expires, on the monotonic clock of the sidecar.
package struct AccessToken: Sendable, Equatable, CustomStringConvertible {
    /// Visible ASCII: safe in an `Authorization` header. Never log it.
    package var value: String
    /// Seconds it lives from receipt (`expires_in`).
    package var lifetime: Double

    package init(value: String, lifetime: Double) {
        self.value = value
        self.lifetime = lifetime
    }

    package var description: String { "access token …\(TokenFingerprint.of(value)) for \(Int(lifetime)) s" }
}

/// Reads what the OAuth token endpoint and the metadata server answer with a token:
/// `{"access_token": "…", "expires_in": 3599, "token_type": "Bearer"}` (RFC 6749 §5.1), and
/// what the token endpoint answers when it refuses: `{"error": "invalid_grant",
/// "error_description": "…"}` (§5.2). Bounded, and no refusal quotes the token.
package enum AccessTokenAnswer {
    /// The longest access token taken: Google's are about 200 bytes to 2 KB.
    static let maximumTokenLength = 8192
    /// The longest `error` or `error_description` repeated to a client.
    static let maximumErrorLength = 200

    /// The token in a 2xx answer's body; `from` names the endpoint in a refusal.
    package static func parse(_ body: [UInt8], from endpoint: String) -> Result<AccessToken, ProxyFailure> {
        guard case .object(let members)? = JSONish.parse(body) else {
            return unusable("\(endpoint) answer is not a JSON object")
        }
        guard let token = members["access_token"]?.stringValue, !token.isEmpty else {
            return unusable("\(endpoint) answer has no \"access_token\" string")
        }
        guard token.utf8.count <= maximumTokenLength, token.utf8.allSatisfy(ASCII.isVisible) else {
            return unusable("\(endpoint) answer's \"access_token\" is longer than \(maximumTokenLength) bytes or not visible ASCII")
        }
        if let type = members["token_type"], type.stringValue?.lowercased() != "bearer" {
            return unusable("\(endpoint) answer's \"token_type\" is not Bearer")
        }
        guard let expiresIn = members["expires_in"]?.numberValue, expiresIn.isFinite, expiresIn > 0, expiresIn <= 86_400 else {
            return unusable("\(endpoint) answer has no \"expires_in\" from 1 to 86400 seconds")
        }
        return .success(AccessToken(value: token, lifetime: expiresIn))
    }

    /// The `error` and `error_description` of a refusal, cut short and reduced to printable
    /// ASCII; nil when the body does not carry an `error` string.
    package static func refusal(_ body: [UInt8]) -> String? {
        guard case .object(let members)? = JSONish.parse(body) else { return nil }
        // Google's APIs (IAM) nest it: {"error": {"code": 403, "message": "…", "status": "PERMISSION_DENIED"}}.
        if case .object(let inner)? = members["error"] {
            guard let message = inner["message"]?.stringValue else { return nil }
            let status = inner["status"]?.stringValue.map { printable($0) + ": " } ?? ""
            return status + printable(message)
        }
        guard let error = members["error"]?.stringValue else { return nil }
        guard let description = members["error_description"]?.stringValue, !description.isEmpty else {
            return printable(error)
        }
        return printable(error) + ": " + printable(description)
    }

    /// At most `maximumErrorLength` characters of printable ASCII: an endpoint's text goes
    /// into a client's error and a log line.
    static func printable(_ text: String) -> String {
        let bytes = text.utf8.prefix(maximumErrorLength).map { $0 >= 0x20 && $0 <= 0x7E ? $0 : UInt8(ascii: "?") }
        return String(decoding: bytes, as: UTF8.self) + (text.utf8.count > maximumErrorLength ? "…" : "")
    }

    private static func unusable(_ message: String) -> Result<AccessToken, ProxyFailure> {
        .failure(.providerAnswerUnusable(message))
    }
}
