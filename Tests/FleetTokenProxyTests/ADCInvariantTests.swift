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
            AuthorizedUserCredentials(clientID: "c", clientSecret: "s3cret", refreshToken: "r3fresh", quotaProjectID: "q"),
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
