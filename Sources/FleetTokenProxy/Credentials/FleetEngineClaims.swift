/// The header and claims of a JWT the sidecar signs itself for one entity (docs/CONTRACT.md
/// §2, §4a): `iss` = `sub` = the service account, `aud` = Fleet Engine, `iat` back-dated
/// (`backdate(lifetime:)`), `exp` = `iat` + the lifetime, and the `authorization` claim the
/// entity's calls need. Pure: the same inputs give the same bytes, so it is tested without a key.
struct FleetEngineClaims: Sendable, Equatable {
    /// How far `iat` lies before the host's clock: a minute, at most a tenth of the lifetime.
    /// Fleet Engine refuses a token issued in its future beyond about ten minutes, so a minute
    /// keeps a host whose clock runs a little fast well inside; not more, because `exp − iat`
    /// stays the lifetime and each second back is a second less for a host whose clock is slow.
    static func backdate(lifetime: Double) -> Double {
        min(60, lifetime / 10)
    }

    package var account: String
    package var keyID: String
    /// Epoch seconds.
    package var issuedAt: Int
    package var expiresAt: Int
    package var authorization: [String: JSONish]

    /// The claims for `key` signed at wall-clock `wallNow`; `lifetime` is `exp − iat`.
    package init(for key: EntityKey, account: String, keyID: String, wallNow: Double, lifetime: Double) {
        self.account = account
        self.keyID = keyID
        issuedAt = Int((wallNow - Self.backdate(lifetime: lifetime)).rounded(.down))
        expiresAt = issuedAt + Int(lifetime.rounded())
        authorization = Self.authorization(for: key)
    }

    /// What each token type may act on. Task calls name one task (`taskid`); the fleet token
    /// is for listings, searches and `BatchCreateTasks`, which Fleet Engine checks against
    /// wildcards, the last one against `taskids`.
    package static func authorization(for key: EntityKey) -> [String: JSONish] {
        switch key.type {
        case .vehicle: return ["vehicleid": .string(key.id)]
        case .trip: return ["tripid": .string(key.id)]
        case .deliveryVehicle: return ["deliveryvehicleid": .string(key.id)]
        case .task: return ["taskid": .string(key.id)]
        case .tracking: return ["trackingid": .string(key.id)]
        case .fleet:
            return [
                "vehicleid": .string("*"), "tripid": .string("*"), "deliveryvehicleid": .string("*"),
                "taskid": .string("*"), "taskids": .array([.string("*")]), "trackingid": .string("*"),
            ]
        }
    }

    /// `base64url(header) . base64url(claims)`: what the signature covers.
    package var signingInput: String {
        let header: JSONish = .object(["alg": .string("RS256"), "typ": .string("JWT"), "kid": .string(keyID)])
        return Base64URL.encode(Array(header.jsonText.utf8)) + "." + Base64URL.encode(Array(claimsJSON.utf8))
    }

    /// The claims as JSON text: the payload IAM `signJwt` signs (it writes the header itself).
    package var claimsJSON: String {
        JSONish.object([
            "iss": .string(account), "sub": .string(account), "aud": .string(TokenScopeCheck.audience),
            "iat": .number(Double(issuedAt)), "exp": .number(Double(expiresAt)),
            "authorization": .object(authorization),
        ]).jsonText
    }

    /// The claims as the token cache's scope check reads them, so it need not decode the token.
    var decoded: JWTClaims {
        JWTClaims(exp: Double(expiresAt), iat: Double(issuedAt), aud: [TokenScopeCheck.audience], authorization: authorization)
    }
}
