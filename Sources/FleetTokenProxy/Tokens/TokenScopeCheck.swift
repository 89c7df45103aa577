/// Whether a token the provider answered may be attached to calls about the entity it was
/// fetched for (docs/CONTRACT.md §2, §7): a misconfigured provider must never get a wrong token onto the
/// wire, where Fleet Engine would refuse it (or, worse, accept it for another entity).
///
/// Only JWTs are checked; an opaque token carries nothing to check and is held to its expiry
/// field alone. The claims are read, not verified: Fleet Engine verifies the signature.
/// Every refusal names the mismatch, never the token.
enum TokenScopeCheck {
    /// Fleet Engine's audience (docs/CONTRACT.md §2); accepted with or without the trailing slash.
    package static let audience = "https://fleetengine.googleapis.com/"
    /// Fleet Engine accepts at most an hour of life; ten minutes more allow for clock skew
    /// between the provider and this host.
    static let maximumTimeToExpiry: Double = 3600 + 600

    /// The `authorization` members that name an entity of each kind.
    private static let members: [(name: String, type: EntityType)] = [
        ("vehicleid", .vehicle), ("tripid", .trip), ("deliveryvehicleid", .deliveryVehicle),
        ("taskid", .task), ("taskids", .task), ("trackingid", .tracking),
    ]

    /// Nil when `token` may be used for `key` at wall-clock `wallNow`; otherwise why not.
    package static func problem(with token: FetchedToken, for key: EntityKey, wallNow: Double) -> ProxyFailure? {
        guard !token.isOpaqueAccessToken else { return nil }
        // The claims `ProviderAnswer` read, when the token came from there; otherwise decoded.
        guard let claims = token.claims ?? JWTClaims.decode(token.token) else { return nil }

        let audiences = claims.aud
        guard audiences.contains(where: isFleetEngineAudience) else {
            let named = audiences.isEmpty ? "no audience" : "audience \(quoted(audiences[0]))"
            return refuse("\(token.answeredBy) answered a token for \(named) when asked for one for Fleet Engine (\(quoted(audience)))")
        }

        if let exp = claims.exp, exp - wallNow > maximumTimeToExpiry {
            return refuse(
                "\(token.answeredBy) answered a token that expires in \(Int((exp - wallNow).rounded())) s; "
                    + "Fleet Engine tokens live at most an hour (at most \(Int(maximumTimeToExpiry)) s accepted)")
        }

        guard !covers(claims, key) else { return nil }
        return refuse("\(token.answeredBy) answered a token for \(describe(claims)) when asked for \(describe(key))")
    }

    private static func isFleetEngineAudience(_ value: String) -> Bool {
        value == audience || value + "/" == audience
    }

    /// A vehicle's token must name that vehicle or `*` (likewise every kind); the fleet's
    /// must carry a `*` for some kind, since it is used for listings and searches.
    static func covers(_ claims: JWTClaims, _ key: EntityKey) -> Bool {
        if key.type == .fleet {
            return members.contains { claims.authorizedIDs($0.name).contains("*") }
        }
        return members.contains { member in
            member.type == key.type && claims.authorizedIDs(member.name).contains { $0 == key.id || $0 == "*" }
        }
    }

    /// What a token's claim is for, as the first entity it names; a refusal names one, which is
    /// enough to see a misconfigured provider.
    private static func describe(_ claims: JWTClaims) -> String {
        for member in members {
            if let id = claims.authorizedIDs(member.name).first {
                return id == "*" ? "every \(member.type.rawValue)" : "\(member.type.rawValue) \(quoted(id))"
            }
        }
        return "no entity (no usable authorization claim)"
    }

    private static func describe(_ key: EntityKey) -> String {
        key.type == .fleet ? "the fleet (a \"*\" claim)" : "\(key.type.rawValue) \(quoted(key.id))"
    }

    private static func refuse(_ message: String) -> ProxyFailure {
        .providerAnswerUnusable(message)
    }
}
