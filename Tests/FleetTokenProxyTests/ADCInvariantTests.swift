@testable import FleetTokenProxy
@testable import ParserInvariants
import XCTest

/// The access-token-answer, adc-file, sign-jwt-answer and id-token-answer fuzz targets' invariants can fail:
/// each of these breaks one on purpose.
final class ADCInvariantTests: XCTestCase {
    let body: [String: JSONish] = ["access_token": .string("ya29.a"), "expires_in": .number(3599)]

    func testAnAcceptedTokenMustBeTheBodysOwnWithinADay() throws {
        try AccessTokenAnswerInvariant.checkAccepted(AccessToken(value: "ya29.a", lifetime: 3599), body: body)
        for wrong in [AccessToken(value: "ya29.b", lifetime: 3599), AccessToken(value: "ya29.a", lifetime: 60)] {
            XCTAssertThrowsError(try AccessTokenAnswerInvariant.checkAccepted(wrong, body: body), "\(wrong)")
        }
        var long = body
        long["expires_in"] = .number(100_000)
        XCTAssertThrowsError(try AccessTokenAnswerInvariant.checkAccepted(AccessToken(value: "ya29.a", lifetime: 100_000), body: long))
    }

    func testARefusalMustBePrintableAndShort() throws {
        try AccessTokenAnswerInvariant.checkRefusal("invalid_grant: Bad Request")
        XCTAssertThrowsError(try AccessTokenAnswerInvariant.checkRefusal("bad\r\n"))
        XCTAssertThrowsError(try AccessTokenAnswerInvariant.checkRefusal(String(repeating: "x", count: 500)))
    }

    func testAnAuthorizedUsersFieldsMustBeTheFilesOwn() throws {
        let file: [String: JSONish] = [
            "type": .string("authorized_user"), "client_id": .string("c"), "client_secret": .string("s3cret"), "refresh_token": .string("r3fresh"),
        ]
        try ADCFileInvariant.checkAccepted(AuthorizedUserCredentials(clientID: "c", clientSecret: "s3cret", refreshToken: "r3fresh"), file: file)
        let wrong = [
            AuthorizedUserCredentials(clientID: "c", clientSecret: "s", refreshToken: "other"),
            AuthorizedUserCredentials(clientID: "c", clientSecret: "s3cret", refreshToken: "r3fresh", tokenURI: "https://elsewhere/token"),
        ]
        for user in wrong {
            XCTAssertThrowsError(try ADCFileInvariant.checkAccepted(user, file: file))
        }
    }

    func testASignedJwtMustBeTheAnswersOwnWithItsClaimsAndKid() throws {
        let header = Base64URL.encode(Array(#"{"alg":"RS256","kid":"k1"}"#.utf8))
        let jwt = header + "." + Base64URL.encode(Array(#"{"exp":2000000000}"#.utf8)) + ".c2ln"
        let claims = JWTClaims.decode(jwt)
        let answer: [String: JSONish] = ["keyId": .string("k1"), "signedJwt": .string(jwt)]
        try SignJwtAnswerInvariant.checkAccepted(FetchedToken(token: jwt, expiresAt: 2_000_000_000, claims: claims), answer: answer)
        XCTAssertThrowsError(try SignJwtAnswerInvariant.checkAccepted(
            FetchedToken(token: jwt, expiresAt: 2_000_000_001, claims: claims), answer: answer), "an expiry other than exp")
        XCTAssertThrowsError(try SignJwtAnswerInvariant.checkAccepted(
            FetchedToken(token: jwt, expiresAt: 2_000_000_000, claims: JWTClaims(exp: 1)), answer: answer), "claims not the JWT's")
        var otherKey = answer
        otherKey["keyId"] = .string("k2")
        XCTAssertThrowsError(try SignJwtAnswerInvariant.checkAccepted(
            FetchedToken(token: jwt, expiresAt: 2_000_000_000, claims: claims), answer: otherKey), "a kid other than keyId")
    }

    func testAnIDTokenMustBeAJWTLivingUntilItsExp() throws {
        let exp = Int(IDTokenAnswerInvariant.wallNow) + 3600
        let jwt = Base64URL.encode(Array(#"{"alg":"RS256"}"#.utf8)) + "." + Base64URL.encode(Array(#"{"exp":\#(exp)}"#.utf8)) + ".c2ln"
        try IDTokenAnswerInvariant.checkAccepted(AccessToken(value: jwt, lifetime: 3600))
        XCTAssertThrowsError(try IDTokenAnswerInvariant.checkAccepted(AccessToken(value: jwt, lifetime: 3599)))
        XCTAssertThrowsError(try IDTokenAnswerInvariant.checkAccepted(AccessToken(value: "opaque", lifetime: 3600)))
    }
}

/// The generate-access-token-answer target's invariant, and the adc-file target's promises
/// about impersonation, can fail: each of these breaks one on purpose.
final class ImpersonationInvariantTests: XCTestCase {
    let body: [String: JSONish] = ["accessToken": .string("ya29.i"), "expireTime": .string("2026-01-01T01:00:00Z")]

    func testAGeneratedAccessTokenMustBeTheBodysOwnLivingUntilItsExpireTime() throws {
        try GenerateAccessTokenAnswerInvariant.checkAccepted(AccessToken(value: "ya29.i", lifetime: 3600), body: body)
        for wrong in [AccessToken(value: "ya29.j", lifetime: 3600), AccessToken(value: "ya29.i", lifetime: 3599)] {
            XCTAssertThrowsError(try GenerateAccessTokenAnswerInvariant.checkAccepted(wrong, body: body), "\(wrong)")
        }
        var late = body
        late["expireTime"] = .string("2026-01-02T01:00:00Z")
        XCTAssertThrowsError(try GenerateAccessTokenAnswerInvariant.checkAccepted(AccessToken(value: "ya29.i", lifetime: 90_000), body: late))
        XCTAssertEqual(GenerateAccessTokenAnswerInvariant.epochSeconds("2026-01-01T01:00:00.5+01:00"), 1_767_225_600.5)
    }

    func testTheParserAgreesWithTheInvariantsReadingOfTheTime() {
        let answer = Array(#"{"accessToken":"ya29.i","expireTime":"2026-01-01T00:30:00.25-00:30"}"#.utf8)
        guard case .success(let token) = GenerateAccessTokenAnswer.parse(answer, from: "IAM", wallNow: GenerateAccessTokenAnswerInvariant.wallNow) else {
            return XCTFail("accepted")
        }
        XCTAssertEqual(token.lifetime, 3600.25)
        XCTAssertNoThrow(try GenerateAccessTokenAnswerInvariant.check(answer))
    }

    func testAnImpersonationMustBeTheFilesTargetDelegatesAndSource() throws {
        let user = AuthorizedUserCredentials(clientID: "c", clientSecret: "s3cret", refreshToken: "r3fresh")
        let url = "https://iam/v1/projects/-/serviceAccounts/t@p.iam.gserviceaccount.com:generateAccessToken"
        let file: [String: JSONish] = [
            "type": .string("impersonated_service_account"), "service_account_impersonation_url": .string(url),
            "source_credentials": .object(["type": .string("authorized_user"), "client_id": .string("c"),
                                           "client_secret": .string("s3cret"), "refresh_token": .string("r3fresh")]),
        ]
        let good = ImpersonatedServiceAccount(source: .authorizedUser(user), impersonationURL: url, targetPrincipal: "t@p.iam.gserviceaccount.com")
        try ADCFileInvariant.checkAccepted(good, file: file)
        var otherTarget = good
        otherTarget.targetPrincipal = "p.iam.gserviceaccount.com"
        var delegated = good
        delegated.delegates = ["projects/-/serviceAccounts/x"]
        var otherSource = good
        otherSource.source = .authorizedUser(AuthorizedUserCredentials(clientID: "c", clientSecret: "s3cret", refreshToken: "other"))
        for wrong in [otherTarget, delegated, otherSource] {
            XCTAssertThrowsError(try ADCFileInvariant.checkAccepted(wrong, file: file), "\(wrong)")
        }
        XCTAssertThrowsError(try ADCFileInvariant.checkDescription(good) { impersonation in
            guard case .authorizedUser(let user) = impersonation.source else { return "\(impersonation)" }
            return "\(impersonation) \(user.refreshToken)"
        }, "a description that shows the refresh token")
    }
}
