/// A user's credentials from `gcloud auth application-default login` (an `authorized_user`
/// ADC file, or the source of an impersonation). The secret and the refresh token are never
/// shown: `description` names the client.
package struct AuthorizedUserCredentials: Sendable, Equatable, CustomStringConvertible {
    package var clientID: String
    package var clientSecret: String
    package var refreshToken: String
    package var tokenURI: String?

    package init(clientID: String, clientSecret: String, refreshToken: String, tokenURI: String? = nil) {
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.refreshToken = refreshToken
        self.tokenURI = tokenURI
    }

    package var description: String { "authorized user of client \(clientID)" }
}
