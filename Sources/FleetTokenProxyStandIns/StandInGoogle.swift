import FleetTokenProxy
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Google's credential endpoints on one loopback port (docs/CONTRACT.md §4a), so they share
/// which access tokens are valid: the OAuth token endpoint (`POST /token`, JWT-bearer and
/// refresh-token grants), the metadata server's token path, and IAM's `signJwt`,
/// `generateAccessToken` and `generateIdToken` (`POST
/// /v1/projects/-/serviceAccounts/EMAIL:METHOD`, impersonation), STS (`POST /v1/token`, the
/// token exchange of workload identity federation, trusting one OIDC identity provider's key,
/// AWS credentials it knows, and certificate chains to one CA presented over mutual TLS)
/// and that identity provider's token URL (`GET /oidc/token`, as Azure's instance metadata
/// hands out a token). Each checks
/// what Google's checks: the assertion's RS256 signature, `aud`, `exp` and scope; the client
/// secret and refresh token; the `Metadata-Flavor` header; the bearer token. `failure` makes
/// them refuse or fail, for the error rows.
///
/// Loop-bound: call `handler`, change settings and read counts on one thread.
package final class StandInGoogle {
    /// How the next token requests go wrong, if at all.
    package enum Failure: Sendable, Equatable {
        /// This status with an OAuth error body (`error`, `error_description`).
        case refuse(status: Int, error: String, description: String)
        /// This status with a short body (5xx, 429).
        case status(Int)
        /// 200 with a body that is not a token answer.
        case garbage
        /// The normal answer, this many seconds later.
        case delay(Double)
    }

    /// The service account whose key signs access tokens and `signJwt` payloads, and whose
    /// key the JWT-bearer assertions must be signed with (the account ADC's key file holds).
    package let account: StandInServiceAccount
    /// A user's `authorized_user` credentials: the refresh grant must match them.
    package var authorizedUser: (clientID: String, clientSecret: String, refreshToken: String)?
    /// The token URI assertions must name in `aud` (this stand-in's own `/token` URL).
    package var tokenURI = ""
    package var tokenLifetime: Double = 3600
    package var failure: Failure?
    /// Whether metadata answers say `Metadata-Flavor: Google`; false plays another server at
    /// `GCE_METADATA_HOST`, which the sidecar must not believe.
    package var saysMetadataFlavor = true
    /// How the next `signJwt` calls go wrong (`refuse` answers in Google APIs' error shape).
    package var signJwtFailure: Failure?
    package private(set) var signJwtRequests = 0
    /// Signs a payload whose `authorization` claim names another vehicle: a JWT that verifies
    /// but is for the wrong entity, which the sidecar's claim check must stop.
    package var signsForAnotherEntity = false

    package private(set) var tokenRequests = 0
    package private(set) var metadataRequests = 0
    /// `x-goog-user-project` values seen on IAM calls.
    package private(set) var quotaProjects: [String] = []
    /// `x-goog-user-project` values seen where tokens are made (token endpoint, metadata
    /// server), where Google's libraries never send one.
    package private(set) var tokenQuotaProjects: [String] = []
    /// How the next `generateAccessToken` / `generateIdToken` calls go wrong.
    package var impersonationFailure: Failure?
    package private(set) var generateAccessTokenRequests = 0
    package private(set) var generateIdTokenRequests = 0
    /// The `delegates` and `lifetime` of the last `generateAccessToken` call.
    package private(set) var lastDelegates: [String] = []
    package private(set) var lastLifetime: String?
    /// Access tokens `generateAccessToken` handed out (also in `validTokens`).
    package private(set) var impersonatedTokens: Set<String> = []
    /// The OIDC identity provider whose RS256 subject tokens STS trusts, and the workload
    /// identity pool provider (STS `audience`, the subject token's `aud`) it serves.
    package lazy var identityProvider: RSAKeyPair = {
        do {
            return try RSAKeyPair.generate()
        } catch {
            // A stand-in that cannot make a key cannot stand in for anything.
            fatalError("stand-in identity provider key: \(error)")
        }
    }()
    package var poolAudience = "//iam.googleapis.com/projects/123456/locations/global/workloadIdentityPools/pool/providers/oidc"
    /// How the next STS exchanges go wrong.
    package var stsFailure: Failure?
    /// AWS credentials whose SigV4-signed `GetCallerIdentity` requests STS takes as subject
    /// tokens (an AWS provider of the pool), by access key id; the regions seen.
    package var awsCredentials: [String: SigV4.Credentials] = [:]
    package private(set) var awsRegions: [String] = []
    /// The CA the pool's X.509 provider trusts: STS takes a certificate chain (subject token
    /// type `…:mtls`) that verifies against it, from a client that presented its leaf over
    /// mutual TLS (a server that asks for client certificates: `TLSContext.server(…,
    /// requestingClientCertificates:)`).
    package var trustAnchor: StandInTrustAnchor?
    /// The certificate (DER) the last STS call and the last `generateAccessToken` call presented.
    package private(set) var lastSTSClientCertificate: [UInt8]?
    package private(set) var lastImpersonationClientCertificate: [UInt8]?
    package private(set) var stsRequests = 0
    /// The last exchange's form (subject token left out) and its `Authorization`, if any.
    package private(set) var lastSTSForm: [String: String] = [:]
    package private(set) var lastSTSAuthorization: String?
    /// Federated access tokens STS handed out (also in `validTokens`).
    package private(set) var federatedTokens: Set<String> = []
    package private(set) var subjectTokenURLRequests = 0
    /// The bearer token of the last `signJwt` call.
    package private(set) var lastSignJwtBearer: String?
    /// Access tokens handed out and not revoked.
    package private(set) var validTokens: Set<String> = []
    /// ID tokens handed out, by audience, for the stand-in provider to check.
    package private(set) var idTokens: [String: String] = [:]
    package private(set) var identityRequests = 0

    private let scheduler: Scheduler
    private let wallClock: () -> Double
    private var serial = 0

    package init(account: StandInServiceAccount, scheduler: Scheduler, wallClock: @escaping () -> Double) {
        self.account = account
        self.scheduler = scheduler
        self.wallClock = wallClock
    }

    package static let metadataTokenPath = "/computeMetadata/v1/instance/service-accounts/default/token"
    package static let metadataIdentityPath = "/computeMetadata/v1/instance/service-accounts/default/identity"

    /// Whether `token` is an ID token this stand-in handed out for `audience`.
    package func isIDToken(_ token: String, for audience: String) -> Bool { idTokens[token] == audience }

    /// Forgets every access token handed out, as a revocation would.
    package func revokeAll() { validTokens.removeAll() }

    package var handler: HTTPHandler {
        { request, respond in self.handle(request, respond) }
    }

    private func handle(_ request: HTTPRequest, _ respond: @escaping (HTTPResponse) -> Void) {
        // Google's metadata server names itself on every answer; a probe looks for it.
        let isMetadata = request.path.hasPrefix("/computeMetadata/")
        if isMetadata || request.path == "/token" || request.path == "/v1/token", let quota = request.headers["x-goog-user-project"] { tokenQuotaProjects.append(quota) }
        let respond: (HTTPResponse) -> Void = { response in
            var response = response
            if isMetadata && self.saysMetadataFlavor { response.headers.add("Metadata-Flavor", "Google") }
            respond(response)
        }
        switch (request.method, String(request.path)) {
        case ("GET", "/computeMetadata/v1/"):
            guard request.headers["Metadata-Flavor"] == "Google" else {
                return respond(HTTPResponse(status: 403, headers: ["Content-Type": "text/html"], body: Array("Missing Metadata-Flavor:Google header.".utf8)))
            }
            respond(HTTPResponse(status: 200, headers: ["Content-Type": "application/text"], body: Array("instance/\nproject/\n".utf8)))
        case ("POST", "/token"):
            tokenRequests += 1
            if let problem = checkGrant(request.body) { return respond(problem) }
            if let audience = targetAudience(request.body) {
                identityRequests += 1
                return respond(idTokenAnswer(for: audience, json: true))
            }
            answerToken(respond)
        case ("GET", Self.metadataIdentityPath):
            identityRequests += 1
            guard request.headers["Metadata-Flavor"] == "Google" else {
                return respond(HTTPResponse(status: 403, headers: ["Content-Type": "text/html"], body: Array("Missing Metadata-Flavor:Google header.".utf8)))
            }
            let query = request.target.split(separator: "?", maxSplits: 1).dropFirst().first.map { Self.form(Array($0.utf8)) } ?? [:]
            guard let audience = query["audience"], !audience.isEmpty else {
                return respond(HTTPResponse(status: 400, headers: ["Content-Type": "text/plain"], body: Array("non-empty audience parameter required".utf8)))
            }
            respond(idTokenAnswer(for: audience, json: false))
        case ("GET", Self.metadataTokenPath):
            metadataRequests += 1
            guard request.headers["Metadata-Flavor"] == "Google" else {
                return respond(HTTPResponse(status: 403, headers: ["Content-Type": "text/html"], body: Array("Missing Metadata-Flavor:Google header.".utf8)))
            }
            answerToken(respond)
        case ("POST", "/v1/token"):
            stsRequests += 1
            lastSTSAuthorization = request.headers["Authorization"]
            lastSTSClientCertificate = request.clientCertificate
            respond(exchange(Self.form(request.body), clientCertificate: request.clientCertificate))
        case ("GET", "/oidc/token"):
            subjectTokenURLRequests += 1
            guard request.headers["Metadata"] == "True" else {
                return respond(Self.oauthError(400, "invalid_request", "Required metadata header not specified"))
            }
            respond(.json(200, JSONish.object(["access_token": .string(subjectToken()), "token_type": .string("Bearer")]).jsonText))
        case ("POST", let path) where path.hasPrefix(Self.signJwtPrefix) && path.hasSuffix(":generateAccessToken"):
            generateAccessTokenRequests += 1
            lastImpersonationClientCertificate = request.clientCertificate
            respond(impersonate(as: String(path.dropFirst(Self.signJwtPrefix.count).dropLast(":generateAccessToken".count)), request, idToken: false))
        case ("POST", let path) where path.hasPrefix(Self.signJwtPrefix) && path.hasSuffix(":generateIdToken"):
            generateIdTokenRequests += 1
            respond(impersonate(as: String(path.dropFirst(Self.signJwtPrefix.count).dropLast(":generateIdToken".count)), request, idToken: true))
        case ("POST", let path) where path.hasPrefix(Self.signJwtPrefix) && path.hasSuffix(":signJwt"):
            signJwtRequests += 1
            let email = String(path.dropFirst(Self.signJwtPrefix.count).dropLast(":signJwt".count))
            if case .delay(let seconds)? = signJwtFailure {
                scheduler.schedule(after: seconds) { [self] in respond(signJwt(as: email, request)) }
            } else {
                respond(signJwt(as: email, request))
            }
        default:
            respond(Self.oauthError(404, "not_found", "the stand-in Google has no \(request.method) \(request.path)"))
        }
    }

    /// Nil when the form is a grant Google would honour; otherwise its refusal.
    private func checkGrant(_ body: [UInt8]) -> HTTPResponse? {
        let form = Self.form(body)
        switch form["grant_type"] {
        case "urn:ietf:params:oauth:grant-type:jwt-bearer":
            guard let assertion = form["assertion"] else { return Self.oauthError(400, "invalid_request", "no assertion") }
            return checkAssertion(assertion)
        case "refresh_token":
            guard let user = authorizedUser else { return Self.oauthError(400, "unsupported_grant_type", "no user credentials configured") }
            guard form["client_id"] == user.clientID, form["client_secret"] == user.clientSecret else {
                return Self.oauthError(401, "invalid_client", "The OAuth client was not found.")
            }
            guard form["refresh_token"] == user.refreshToken else {
                return Self.oauthError(400, "invalid_grant", "Bad Request")
            }
            return nil
        default:
            return Self.oauthError(400, "unsupported_grant_type", "Invalid grant_type")
        }
    }

    private func checkAssertion(_ assertion: String) -> HTTPResponse? {
        let check = FleetEngineTokenCheck(trustedKeys: [account.trustedKey])
        let parts = assertion.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let claimBytes = JWTMinter.Base64URL.decode(parts[1]),
              case .object(let claims)? = JSONish.parse(claimBytes),
              let header = JWTMinter.Base64URL.decode(parts[0]).flatMap({ JSONish.parse($0) }),
              case .object(let headerFields) = header, headerFields["alg"]?.stringValue == "RS256",
              let signature = JWTMinter.Base64URL.decode(parts[2])
        else { return Self.oauthError(400, "invalid_grant", "Invalid JWT: malformed") }
        let signed = Array(assertion.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard claims["iss"]?.stringValue == account.email,
              check.trustedKeys.contains(where: { $0.publicKey.verify(signed, signature: signature) })
        else { return Self.oauthError(400, "invalid_grant", "Invalid JWT Signature.") }
        guard claims["aud"]?.stringValue == tokenURI else {
            return Self.oauthError(400, "invalid_grant", "Invalid JWT: aud must be \(tokenURI)")
        }
        let now = wallClock()
        guard let exp = claims["exp"]?.numberValue, let iat = claims["iat"]?.numberValue, exp > now, exp - iat <= 3600, iat <= now + 60 else {
            return Self.oauthError(400, "invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.")
        }
        // An ID token grant names its audience instead of a scope.
        if claims["target_audience"]?.stringValue != nil { return nil }
        guard let scope = claims["scope"]?.stringValue, scope.split(separator: " ").contains("https://www.googleapis.com/auth/cloud-platform") else {
            return Self.oauthError(400, "invalid_scope", "cloud-platform scope missing")
        }
        return nil
    }

    /// The `target_audience` of a JWT-bearer assertion that asks for an ID token.
    private func targetAudience(_ body: [UInt8]) -> String? {
        guard let assertion = Self.form(body)["assertion"] else { return nil }
        let parts = assertion.split(separator: ".")
        guard parts.count == 3, let bytes = JWTMinter.Base64URL.decode(parts[1]), case .object(let claims)? = JSONish.parse(bytes) else { return nil }
        return claims["target_audience"]?.stringValue
    }

    /// A Google-signed ID token for `audience` (`iss` accounts.google.com, `aud`, `email`), as
    /// JSON from the token endpoint or as text from the metadata server.
    private func idTokenAnswer(for audience: String, json: Bool, member: String = "id_token") -> HTTPResponse {
        let now = Int(wallClock())
        let header = JSONish.object(["alg": .string("RS256"), "kid": .string(account.keyPair.keyID), "typ": .string("JWT")]).jsonText
        let claims = JSONish.object([
            "iss": .string("https://accounts.google.com"), "aud": .string(audience), "sub": .string("1234567890"),
            "email": .string(account.email), "iat": .number(Double(now)), "exp": .number(Double(now + Int(tokenLifetime))),
        ]).jsonText
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        guard let signature = try? account.keyPair.sign(Array(input.utf8)) else { return Self.oauthError(500, "internal", "could not sign") }
        let token = input + "." + Base64URL.encode(signature)
        idTokens[token] = audience
        if json { return .json(200, JSONish.object([member: .string(token)]).jsonText) }
        return HTTPResponse(status: 200, headers: ["Content-Type": "text/html"], body: Array(token.utf8))
    }

    static let signJwtPrefix = "/v1/projects/-/serviceAccounts/"

    /// IAM `signJwt`: the bearer token must be one this stand-in handed out, the account its
    /// own; the payload a JSON object whose `exp` is at most 12 hours ahead, as IAM requires.
    /// IAM writes the header itself, with `kid` = the key it signs with.
    private func signJwt(as email: String, _ request: HTTPRequest) -> HTTPResponse {
        let bearer = request.headers["Authorization"].flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }
        guard let bearer, validTokens.contains(bearer) else {
            return Self.apiError(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
        }
        lastSignJwtBearer = bearer
        if let quota = request.headers["x-goog-user-project"] { quotaProjects.append(quota) }
        switch signJwtFailure {
        case .refuse(let status, _, let description)?:
            return Self.apiError(status, status == 403 ? "PERMISSION_DENIED" : "INVALID_ARGUMENT", description)
        case .status(let status)?:
            return Self.apiError(status, "UNAVAILABLE", "The service is currently unavailable.")
        case .garbage?:
            return .json(200, #"{"keyId": "k"}"#)
        case .delay?, nil:
            // A delay is the caller's to apply; the answer itself is the normal one.
            break
        }
        guard email == account.email else {
            return Self.apiError(403, "PERMISSION_DENIED", "Permission 'iam.serviceAccounts.signJwt' denied on resource (or it may not exist).")
        }
        guard case .object(let body)? = JSONish.parse(request.body), let payload = body["payload"]?.stringValue,
              case .object(let claims)? = JSONish.parse(Array(payload.utf8))
        else { return Self.apiError(400, "INVALID_ARGUMENT", "Invalid JSON payload received.") }
        guard let exp = claims["exp"]?.numberValue, exp <= wallClock() + 12 * 3600 else {
            return Self.apiError(400, "INVALID_ARGUMENT", "JWT validation failed: exp is missing or too far in the future")
        }
        var signed = payload
        if signsForAnotherEntity {
            var changed = claims
            changed["authorization"] = .object(["vehicleid": .string("someone-else")])
            signed = JSONish.object(changed).jsonText
        }
        let header = JSONish.object(["alg": .string("RS256"), "kid": .string(account.keyPair.keyID), "typ": .string("JWT")]).jsonText
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(signed.utf8))
        guard let signature = try? account.keyPair.sign(Array(input.utf8)) else { return Self.apiError(500, "INTERNAL", "could not sign") }
        return .json(200, JSONish.object([
            "keyId": .string(account.keyPair.keyID), "signedJwt": .string(input + "." + Base64URL.encode(signature)),
        ]).jsonText)
    }

    /// An OIDC token of the identity provider for `subject`, for the pool unless `audience`
    /// says otherwise, living `lifetime` seconds (negative: already expired).
    package func subjectToken(subject: String = "system:serviceaccount:fleet:sidecar", audience: String? = nil, lifetime: Double = 3600,
                              signedBy key: RSAKeyPair? = nil) -> String {
        let now = wallClock()
        let header = JSONish.object(["alg": .string("RS256"), "kid": .string(identityProvider.keyID), "typ": .string("JWT")]).jsonText
        let claims = JSONish.object([
            "iss": .string("https://oidc.stand-in.example"), "sub": .string(subject), "aud": .string(audience ?? poolAudience),
            "iat": .number(now.rounded(.down)), "exp": .number((now + lifetime).rounded(.down)),
        ]).jsonText
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        let signature = (try? (key ?? identityProvider).sign(Array(input.utf8))) ?? []
        return input + "." + Base64URL.encode(signature)
    }

    /// What `gcloud iam workload-identity-pools create-cred-config --service-account` writes for
    /// this stand-in (at `origin`) as the pool and the account impersonated, `external-account.json`,
    /// and its subject token file `oidc-token` (an OIDC token of the identity provider, valid an
    /// hour), both mode 0600 in `directory`; returns the file's path. No key in either.
    package func writeExternalAccount(origin: String, in directory: String) throws -> String {
        let tokenPath = directory + "/oidc-token"
        let configPath = directory + "/external-account.json"
        let config = JSONish.object([
            "type": .string("external_account"), "audience": .string(poolAudience),
            "subject_token_type": .string("urn:ietf:params:oauth:token-type:jwt"), "token_url": .string("\(origin)/v1/token"),
            "credential_source": .object(["file": .string(tokenPath)]),
            "service_account_impersonation_url": .string("\(origin)\(Self.signJwtPrefix)\(account.email):generateAccessToken"),
        ]).jsonText
        for (path, text) in [(tokenPath, subjectToken(lifetime: 3600)), (configPath, config)] {
            try? FileManager.default.removeItem(atPath: path)
            guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
                throw ConfigError("cannot write \(path)")
            }
        }
        return configPath
    }

    /// STS (RFC 8693): a token-exchange grant for an access token, for this pool, with scope
    /// cloud-platform, and a subject token the identity provider signed for the pool that has
    /// not expired; refusals in OAuth's shape, as Google's STS answers them.
    private func exchange(_ form: [String: String], clientCertificate: [UInt8]?) -> HTTPResponse {
        lastSTSForm = form.filter { $0.key != "subject_token" }
        switch stsFailure {
        case .refuse(let status, let error, let description)?: return Self.oauthError(status, error, description)
        case .status(let status)?: return HTTPResponse(status: status, headers: ["Content-Type": "text/plain"], body: Array("stand-in STS told to answer \(status)".utf8))
        case .garbage?: return .json(200, #"{"token_type": "Bearer"}"#)
        case .delay?, nil: break
        }
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:token-exchange" else {
            return Self.oauthError(400, "unsupported_grant_type", "Invalid grant_type")
        }
        guard form["requested_token_type"] == "urn:ietf:params:oauth:token-type:access_token" else {
            return Self.oauthError(400, "invalid_request", "Invalid requested_token_type")
        }
        let isAWS = form["subject_token_type"] == "urn:ietf:params:aws:token-type:aws4_request"
        let isCertificate = form["subject_token_type"] == CertificateCredentialSource.subjectTokenType
        guard isAWS || isCertificate || ["urn:ietf:params:oauth:token-type:jwt", "urn:ietf:params:oauth:token-type:id_token"].contains(form["subject_token_type"] ?? "") else {
            return Self.oauthError(400, "invalid_request", "Invalid subject_token_type")
        }
        guard form["audience"] == poolAudience else {
            return Self.oauthError(400, "invalid_target", "The target service indicated by the \"audience\" parameters is invalid.")
        }
        guard form["scope"]?.split(separator: " ").contains("https://www.googleapis.com/auth/cloud-platform") == true else {
            return Self.oauthError(400, "invalid_scope", "cloud-platform scope missing")
        }
        if isAWS {
            if let refusal = checkAWSRequest(form["subject_token"] ?? "") { return refusal }
            return federatedToken()
        }
        if isCertificate {
            if let refusal = checkCertificateChain(form["subject_token"] ?? "", presented: clientCertificate) { return refusal }
            return federatedToken()
        }
        let parts = (form["subject_token"] ?? "").split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let claimBytes = JWTMinter.Base64URL.decode(parts[1]), case .object(let claims)? = JSONish.parse(claimBytes),
              let signature = JWTMinter.Base64URL.decode(parts[2]),
              identityProvider.publicKey.verify(Array((parts[0] + "." + parts[1]).utf8), signature: signature)
        else { return Self.oauthError(400, "invalid_grant", "The given subject token could not be verified.") }
        guard claims["aud"]?.stringValue == poolAudience else {
            return Self.oauthError(400, "invalid_grant", "The audience in ID Token does not match the expected audience.")
        }
        guard let exp = claims["exp"]?.numberValue, exp > wallClock() else {
            return Self.oauthError(400, "invalid_grant", "ID Token has expired.")
        }
        return federatedToken()
    }

    /// An AWS subject token: the percent-encoded JSON of a `GetCallerIdentity` request to a
    /// regional AWS STS, for this pool, whose SigV4 signature is the one its access key's
    /// secret makes. Nil when STS would take it.
    private func checkAWSRequest(_ token: String) -> HTTPResponse? {
        let invalid = Self.oauthError(400, "invalid_grant", "The given AWS request could not be verified.")
        guard let text = Self.form(Array("t=\(token)".utf8))["t"], case .object(let request)? = JSONish.parse(Array(text.utf8)),
              request["method"]?.stringValue == "POST", let url = request["url"]?.stringValue, case .array(let list)? = request["headers"]
        else { return invalid }
        var headers: [String: String] = [:]
        for item in list {
            guard case .object(let field) = item, let key = field["key"]?.stringValue, let value = field["value"]?.stringValue else { return invalid }
            headers[key] = value
        }
        guard headers["x-goog-cloud-target-resource"] == poolAudience else {
            return Self.oauthError(400, "invalid_grant", "The AWS request is not for this pool.")
        }
        let prefix = "https://sts.", suffix = ".amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15"
        guard url.hasPrefix(prefix), url.hasSuffix(suffix), let host = headers["host"], let date = headers["x-amz-date"],
              let authorization = headers["Authorization"],
              let credential = authorization.split(separator: " ").first(where: { $0.hasPrefix("Credential=") }),
              let keyID = credential.dropFirst("Credential=".count).split(separator: "/").first,
              let known = awsCredentials[String(keyID)]
        else { return invalid }
        let region = String(url.dropFirst(prefix.count).dropLast(suffix.count))
        guard host == "sts.\(region).amazonaws.com", headers["x-amz-security-token"] == known.sessionToken else { return invalid }
        let expected = SigV4.sign(method: "POST", host: host, path: "", query: "Action=GetCallerIdentity&Version=2011-06-15",
                                  credentials: known, region: region, amzDate: date)
        guard expected.first?.value == authorization else {
            return Self.oauthError(400, "invalid_grant", "The AWS request signature does not match.")
        }
        awsRegions.append(region)
        return nil
    }

    /// An X.509 subject token: a JSON array of base64 DER certificates, the leaf first, whose
    /// leaf is the certificate the client presented on this connection and which verifies
    /// against the trust anchor through the rest. Nil when STS would take it.
    private func checkCertificateChain(_ token: String, presented: [UInt8]?) -> HTTPResponse? {
        guard let presented else {
            return Self.oauthError(400, "invalid_request", "This subject_token_type needs a client certificate (mutual TLS).")
        }
        let unreadable = Self.oauthError(400, "invalid_grant", "The subject token is not a certificate chain.")
        guard case .array(let items)? = JSONish.parse(Array(token.utf8)), !items.isEmpty else { return unreadable }
        var chain: [[UInt8]] = []
        for item in items {
            guard let text = item.stringValue, let der = Self.base64Decode(text) else { return unreadable }
            chain.append(der)
        }
        guard chain[0] == presented else {
            return Self.oauthError(400, "invalid_grant", "The subject token's leaf certificate is not the client certificate of the connection.")
        }
        guard let trustAnchor, trustAnchor.verifies(leaf: chain[0], intermediates: Array(chain.dropFirst())) else {
            return Self.oauthError(400, "invalid_grant", "The certificate chain does not verify against the pool's trust store.")
        }
        return nil
    }

    /// Padded standard base64 (RFC 4648 §4), read by the strict base64url reader.
    static func base64Decode(_ text: String) -> [UInt8]? {
        var body = Substring(text)
        for _ in 0..<2 where body.hasSuffix("=") { body = body.dropLast() }
        guard (text.utf8.count % 4) == 0 else { return nil }
        return JWTMinter.Base64URL.decode(String(body.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 }))
    }

    /// A federated access token for the pool's principal, as STS hands it out.
    private func federatedToken() -> HTTPResponse {
        serial += 1
        guard let token = try? StandInAccessToken.mint(account: account.email, keyPair: account.keyPair,
                                                       expiresAt: Int(wallClock() + tokenLifetime), serial: serial)
        else { return Self.oauthError(500, "internal", "could not sign") }
        validTokens.insert(token)
        federatedTokens.insert(token)
        return .json(200, JSONish.object([
            "access_token": .string(token), "issued_token_type": .string("urn:ietf:params:oauth:token-type:access_token"),
            "token_type": .string("Bearer"), "expires_in": .number((tokenLifetime - 1).rounded()),
        ]).jsonText)
    }

    /// IAM `generateAccessToken` / `generateIdToken` as `email`: the bearer token must be one
    /// this stand-in handed out, the account its own; an access token needs a scope and at
    /// most an hour (IAM's limit without an organisation policy), an ID token an audience.
    private func impersonate(as email: String, _ request: HTTPRequest, idToken: Bool) -> HTTPResponse {
        let bearer = request.headers["Authorization"].flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }
        guard let bearer, validTokens.contains(bearer) else {
            return Self.apiError(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
        }
        if let quota = request.headers["x-goog-user-project"] { quotaProjects.append(quota) }
        switch impersonationFailure {
        case .refuse(let status, _, let description)?:
            return Self.apiError(status, status == 403 ? "PERMISSION_DENIED" : "INVALID_ARGUMENT", description)
        case .status(let status)?:
            return Self.apiError(status, "UNAVAILABLE", "The service is currently unavailable.")
        case .garbage?:
            return .json(200, #"{"expireTime": "2030-01-01T00:00:00Z"}"#)
        case .delay?, nil:
            break
        }
        guard email == account.email else {
            return Self.apiError(403, "PERMISSION_DENIED", "Permission 'iam.serviceAccounts.getAccessToken' denied on resource (or it may not exist).")
        }
        guard case .object(let body)? = JSONish.parse(request.body) else {
            return Self.apiError(400, "INVALID_ARGUMENT", "Invalid JSON payload received.")
        }
        if case .array(let delegates)? = body["delegates"] { lastDelegates = delegates.compactMap(\.stringValue) } else { lastDelegates = [] }
        if idToken {
            guard let audience = body["audience"]?.stringValue, !audience.isEmpty else {
                return Self.apiError(400, "INVALID_ARGUMENT", "audience is required")
            }
            return idTokenAnswer(for: audience, json: true, member: "token")
        }
        guard case .array(let scopes)? = body["scope"], scopes.contains(.string("https://www.googleapis.com/auth/cloud-platform")) else {
            return Self.apiError(400, "INVALID_ARGUMENT", "Scope required.")
        }
        lastLifetime = body["lifetime"]?.stringValue
        var lifetime = 3600
        if let text = lastLifetime {
            guard text.hasSuffix("s"), let seconds = Int(text.dropLast()), (1...3600).contains(seconds) else {
                return Self.apiError(400, "INVALID_ARGUMENT", "The lifetime must be between 1s and 3600s.")
            }
            lifetime = seconds
        }
        serial += 1
        let expiresAt = Int(wallClock()) + lifetime
        guard let token = try? StandInAccessToken.mint(account: account.email, keyPair: account.keyPair, expiresAt: expiresAt, serial: serial) else {
            return Self.apiError(500, "INTERNAL", "could not sign")
        }
        validTokens.insert(token)
        impersonatedTokens.insert(token)
        return .json(200, JSONish.object(["accessToken": .string(token), "expireTime": .string(Self.rfc3339(expiresAt))]).jsonText)
    }

    /// `YYYY-MM-DDTHH:MM:SSZ` for epoch seconds.
    static func rfc3339(_ epochSeconds: Int) -> String {
        let second = epochSeconds % 86_400
        let (year, month, day) = SigV4.civil(epochSeconds / 86_400)
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(year)-\(two(month))-\(two(day))T\(two(second / 3600)):\(two(second % 3600 / 60)):\(two(second % 60))Z"
    }

    /// Google APIs' error shape: `{"error": {"code", "message", "status"}}`.
    static func apiError(_ code: Int, _ status: String, _ message: String) -> HTTPResponse {
        .json(code, JSONish.object(["error": .object([
            "code": .number(Double(code)), "message": .string(message), "status": .string(status),
        ])]).jsonText)
    }

    private func answerToken(_ respond: @escaping (HTTPResponse) -> Void) {
        switch failure {
        case .refuse(let status, let error, let description)?:
            respond(Self.oauthError(status, error, description))
        case .status(let status)?:
            respond(HTTPResponse(status: status, headers: ["Content-Type": "text/plain"], body: Array("stand-in Google told to answer \(status)".utf8)))
        case .garbage?:
            respond(.json(200, #"{"token_type": "Bearer"}"#))
        case .delay(let seconds)?:
            scheduler.schedule(after: seconds) { [self] in respond(tokenAnswer()) }
        case nil:
            respond(tokenAnswer())
        }
    }

    private func tokenAnswer() -> HTTPResponse {
        serial += 1
        let token: String
        do {
            token = try StandInAccessToken.mint(
                account: account.email, keyPair: account.keyPair, expiresAt: Int(wallClock() + tokenLifetime), serial: serial)
        } catch {
            return Self.oauthError(500, "internal", "could not sign")
        }
        validTokens.insert(token)
        return .json(200, JSONish.object([
            "access_token": .string(token), "expires_in": .number((tokenLifetime - 1).rounded()), "token_type": .string("Bearer"),
        ]).jsonText)
    }

    /// `application/x-www-form-urlencoded` pairs, percent-decoded.
    static func form(_ body: [UInt8]) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in body.split(separator: UInt8(ascii: "&")) {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, let name = decode(parts[0]), let value = decode(parts[1]) else { continue }
            fields[name] = value
        }
        return fields
    }

    private static func decode(_ bytes: ArraySlice<UInt8>) -> String? {
        var out: [UInt8] = []
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "+") {
                out.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.endIndex, let value = UInt8(String(decoding: bytes[(index + 1)...(index + 2)], as: UTF8.self), radix: 16) else { return nil }
                out.append(value)
                index += 2
            } else {
                out.append(byte)
            }
            index += 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func oauthError(_ status: Int, _ error: String, _ description: String) -> HTTPResponse {
        .json(status, JSONish.object(["error": .string(error), "error_description": .string(description)]).jsonText)
    }
}
