import FleetTokenProxy

/// How the stand-in Fleet Engine judges a call's token: the checks Fleet Engine makes (docs/CONTRACT.md §2),
/// in the order it makes them, so a sidecar that attaches a wrong, stale or foreign token is
/// caught on loopback the way production would catch it.
package struct FleetEngineTokenCheck: Sendable {
    /// Why a token was refused. The raw value is the key in the stand-in's statistics.
    package enum Reason: String, Sendable, CaseIterable {
        case missingToken = "missing_token"
        /// More than one `Authorization` header: a proxy that added one instead of replacing it.
        case multipleAuthorizationHeaders = "multiple_authorization_headers"
        case malformedToken = "malformed_token"
        case unsupportedAlgorithm = "unsupported_algorithm"
        case unknownKeyID = "unknown_key_id"
        case badSignature = "bad_signature"
        case wrongAudience = "wrong_audience"
        /// `iss` and `sub` missing or different.
        case wrongIssuer = "wrong_issuer"
        case expired = "expired"
        case issuedInFuture = "issued_in_future"
        /// `exp − iat` over an hour, or not positive.
        case badLifetime = "bad_lifetime"
        /// The signing service account belongs to another project than the call's provider.
        case wrongProject = "wrong_project"
        /// The `authorization` claim does not name the call's entity.
        case entityNotCovered = "entity_not_covered"

        /// 401 when the token itself is unusable, 403 when it is good but not for this call.
        package var httpStatus: Int {
            switch self {
            case .wrongProject, .entityNotCovered: return 403
            default: return 401
            }
        }

        package var statusName: String { httpStatus == 403 ? "PERMISSION_DENIED" : "UNAUTHENTICATED" }
    }

    /// The outcome for one call.
    package enum Verdict: Sendable, Equatable {
        case ok
        /// `detail` says what was wrong for a human; it never contains the token.
        case rejected(Reason, detail: String)

        package var reason: Reason? {
            if case .rejected(let reason, _) = self { return reason }
            return nil
        }
    }

    /// A public key tokens may be signed with, as Google publishes a service account's keys
    /// (a JWKS per account): a token must name its `kid`, and `iss` must be its account.
    package struct TrustedKey: Sendable {
        /// nil: the key signs for any account (the stand-in provider's key).
        package var account: String?
        package var keyID: String
        package var publicKey: RSAPublicKey

        package init(account: String?, keyID: String, publicKey: RSAPublicKey) {
            self.account = account
            self.keyID = keyID
            self.publicKey = publicKey
        }
    }

    /// Every key a token may be signed with; tests and `--jwks` add service accounts' keys.
    package var trustedKeys: [TrustedKey]
    /// How far in the future `iat` may be (Fleet Engine tolerates about 10 minutes of skew).
    package var allowedClockSkew: Double = 600

    /// Trusts the token provider's one key, for any account.
    package init(publicKey: RSAPublicKey, keyID: String) {
        trustedKeys = [TrustedKey(account: nil, keyID: keyID, publicKey: publicKey)]
    }

    package init(trustedKeys: [TrustedKey]) {
        self.trustedKeys = trustedKeys
    }

    /// Judges the token in `headers` for a call about `entity` at wall-clock time `now`.
    package func check(headers: HTTPHeaders, entity: EntityKey, now: Double) -> Verdict {
        let authorization = headers.values("Authorization")
        guard let header = authorization.first else { return .rejected(.missingToken, detail: "no Authorization header") }
        guard authorization.count == 1 else {
            return .rejected(.multipleAuthorizationHeaders, detail: "\(authorization.count) Authorization headers")
        }
        let scheme = header.prefix(7)
        guard scheme.count == 7, scheme.asciiCaseInsensitiveEquals("Bearer ") else {
            return .rejected(.missingToken, detail: "the Authorization header is not a Bearer token")
        }
        let token = String(header.dropFirst(7).trimmingSpacesAndTabs())
        return check(token: token, entity: entity, now: now)
    }

    /// Judges a bare compact JWT, or a stand-in Google access token (`--signer adc`): that
    /// one acts for its service account on every entity of the account's project, as an
    /// access token of an account with a Fleet Engine admin role does.
    package func check(token: String, entity: EntityKey, now: Double) -> Verdict {
        if token.hasPrefix(StandInAccessToken.prefix) {
            switch StandInAccessToken.verify(token, trustedKeys: trustedKeys, now: now) {
            case .invalid(let verdict): return verdict
            case .valid(let account):
                guard JWTMinter.project(ofServiceAccount: account) == entity.provider else {
                    return .rejected(.wrongProject, detail: "the service account is not one of project \(entity.provider)")
                }
                return .ok
            }
        }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return .rejected(.malformedToken, detail: "a JWT has 3 parts, this has \(parts.count)") }
        guard let headerBytes = JWTMinter.Base64URL.decode(parts[0]),
              let header = jsonObject(headerBytes),
              let payloadBytes = JWTMinter.Base64URL.decode(parts[1]),
              let claims = jsonObject(payloadBytes),
              let signature = JWTMinter.Base64URL.decode(parts[2])
        else { return .rejected(.malformedToken, detail: "a part is not base64url JSON") }

        guard header["alg"]?.stringValue == "RS256" else {
            return .rejected(.unsupportedAlgorithm, detail: "alg must be RS256")
        }
        if let type = header["typ"], type.stringValue != "JWT" {
            return .rejected(.malformedToken, detail: "typ must be JWT")
        }
        let kid = header["kid"]?.stringValue
        let issuer = claims["iss"]?.stringValue
        // The account's own keys (as Fleet Engine looks up the keys of the account in `iss`).
        let candidates = trustedKeys.filter { $0.keyID == kid && ($0.account == nil || $0.account == issuer) }
        guard !candidates.isEmpty else { return .rejected(.unknownKeyID, detail: "kid is not a known key of the account in iss") }
        let signingInput = Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard candidates.contains(where: { $0.publicKey.verify(signingInput, signature: signature) }) else {
            return .rejected(.badSignature, detail: "signature does not verify")
        }

        guard claims["aud"]?.stringValue == JWTMinter.fleetEngineAudience else {
            return .rejected(.wrongAudience, detail: "aud must be \(JWTMinter.fleetEngineAudience)")
        }
        guard let issuer, claims["sub"]?.stringValue == issuer else {
            return .rejected(.wrongIssuer, detail: "iss and sub must be the same service account")
        }
        guard let expiresAt = number(claims["exp"]), let issuedAt = number(claims["iat"]) else {
            return .rejected(.malformedToken, detail: "iat and exp must be numbers")
        }
        guard expiresAt > now else { return .rejected(.expired, detail: "expired \(Int(now - expiresAt)) s ago") }
        guard issuedAt <= now + allowedClockSkew else {
            return .rejected(.issuedInFuture, detail: "iat is \(Int(issuedAt - now)) s in the future")
        }
        let lifetime = expiresAt - issuedAt
        guard lifetime > 0, lifetime <= Double(JWTMinter.maximumLifetime) else {
            return .rejected(.badLifetime, detail: "exp - iat is \(Int(lifetime)) s, must be 1 to \(JWTMinter.maximumLifetime)")
        }
        guard JWTMinter.project(ofServiceAccount: issuer) == entity.provider else {
            return .rejected(.wrongProject, detail: "the service account is not one of project \(entity.provider)")
        }

        guard let rawClaim = claims["authorization"],
              let claim = JWTMinter.AuthorizationClaim(jsonObject: rawClaim)
        else { return .rejected(.entityNotCovered, detail: "no usable authorization claim") }
        guard claim.covers(entity) else {
            return .rejected(.entityNotCovered, detail: "the authorization claim does not cover \(entity.type.rawValue) \(entity.id)")
        }
        return .ok
    }

    private func jsonObject(_ bytes: [UInt8]) -> [String: JSONish]? {
        guard case .object(let members)? = JSONish.parse(bytes) else { return nil }
        return members
    }

    private func number(_ value: JSONish?) -> Double? {
        value?.numberValue
    }
}

extension JWTMinter.AuthorizationClaim {
    /// Whether a token with this claim may act on `entity`. A fleet call needs a wildcard and
    /// no claim naming a single entity: a vehicle's token may not list every trip.
    package func covers(_ entity: EntityKey) -> Bool {
        func matches(_ value: String?) -> Bool { value == entity.id || value == "*" }
        switch entity.type {
        case .vehicle: return matches(vehicleID)
        case .trip: return matches(tripID)
        case .deliveryVehicle: return matches(deliveryVehicleID)
        case .task: return matches(taskID) || (taskIDs ?? []).contains { matches($0) }
        case .tracking: return matches(trackingID)
        case .fleet:
            let named = [vehicleID, tripID, deliveryVehicleID, taskID, trackingID].compactMap { $0 } + (taskIDs ?? [])
            return !named.isEmpty && named.allSatisfy { $0 == "*" }
        }
    }
}

extension Substring {
    /// Without the spaces and tabs at either end (what `trimmingCharacters(in: .whitespaces)`
    /// took off, for the ASCII a header value holds).
    func trimmingSpacesAndTabs() -> Substring {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isBlank($0) }), let last = lastIndex(where: { !isBlank($0) }) else { return "" }
        return self[first...last]
    }
}
