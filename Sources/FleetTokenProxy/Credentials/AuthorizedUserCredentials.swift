/// A user's credentials from `gcloud auth application-default login` (an `authorized_user`
/// ADC file). The secret and the refresh token are never shown: `description` names the client.
package struct AuthorizedUserCredentials: Sendable, Equatable, CustomStringConvertible {
    package var clientID: String
    package var clientSecret: String
    package var refreshToken: String
    /// Sent as `x-goog-user-project` to IAM: Google bills and checks quota of user
    /// credentials against it.
    package var quotaProjectID: String?
    package var tokenURI: String?

    package init(clientID: String, clientSecret: String, refreshToken: String, quotaProjectID: String? = nil, tokenURI: String? = nil) {
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.refreshToken = refreshToken
        self.quotaProjectID = quotaProjectID
        self.tokenURI = tokenURI
    }

    package var description: String { "authorized user of client \(clientID)" }
}
