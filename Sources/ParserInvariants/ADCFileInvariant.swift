import FleetTokenProxy

/// `ADCFile.parse` over any bytes an Application Default Credentials file might hold
/// (docs/CONTRACT.md §4a). Promises: a service account is what `ServiceAccountKeyInvariant`
/// promises; an authorized user's fields are the file's own, 1 to 4096 visible ASCII bytes
/// each (they go into a form body), and its description shows neither the client secret nor
/// the refresh token: it stays the same when they change (whether a short secret happens to
/// be a substring of the client id says nothing). (A refusal cannot repeat a value:
/// `ADCFileError` carries field names only.)
public enum ADCFileInvariant: ParserInvariant {
    public static let name = "adc-file"

    public static func check(_ input: UnsafeRawBufferPointer) throws(InvariantViolation) {
        let bytes = Array(input)
        let members = jsonMembers(bytes)
        switch ADCFile.parse(bytes) {
        case .success(.serviceAccount(let key)):
            try expect(members["type"]?.stringValue == "service_account", "a service account without its type")
            try ServiceAccountKeyInvariant.checkAccepted(key, file: members)
        case .success(.authorizedUser(let user)):
            try checkAccepted(user, file: members)
        case .failure:
            break
        }
    }

    static func checkAccepted(_ user: AuthorizedUserCredentials, file members: [String: JSONish]) throws(InvariantViolation) {
        try expect(members["type"]?.stringValue == "authorized_user", "an authorized user without its type")
        let fields: [(String, String?)] = [
            ("client_id", user.clientID), ("client_secret", user.clientSecret), ("refresh_token", user.refreshToken),
            ("quota_project_id", user.quotaProjectID), ("token_uri", user.tokenURI),
        ]
        for (name, value) in fields {
            try expect(value == members[name]?.stringValue, "\(name) is not the file's")
            if let value {
                try expect((1...4096).contains(value.utf8.count) && value.utf8.allSatisfy { $0 >= 0x21 && $0 <= 0x7E },
                           "accepted a \(name) that is not 1 to 4096 visible ASCII bytes")
            }
        }
        try checkDescription(user)
    }

    /// Described the same whatever the client secret and the refresh token are. (`describe` is
    /// there so that a test can show the check catching a leak.)
    static func checkDescription(_ user: AuthorizedUserCredentials,
                                 describedBy describe: (AuthorizedUserCredentials) -> String = { $0.description }) throws(InvariantViolation) {
        var otherSecret = user
        otherSecret.clientSecret += "x"
        var otherRefreshToken = user
        otherRefreshToken.refreshToken += "y"
        try expect(describe(user) == describe(otherSecret), "the description shows the client secret")
        try expect(describe(user) == describe(otherRefreshToken), "the description shows the refresh token")
    }
}
