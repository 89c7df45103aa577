import XCTest
@testable import FleetTokenProxy

/// IAM `signJwt`'s answer (docs/CONTRACT.md §4a): the JWT IAM signed, its header IAM's own
/// with `kid` = `keyId`, and its claims read for the same check a provider's token gets.
final class SignJwtAnswerTests: XCTestCase {
    let vehicle = EntityKey(provider: "p", type: .vehicle, id: "v1")

    func jwt(kid: String = "k1", alg: String = "RS256", claims: FleetEngineClaims) -> String {
        let header = JSONish.object(["alg": .string(alg), "kid": .string(kid), "typ": .string("JWT")]).jsonText
        return Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.claimsJSON.utf8)) + ".c2ln"
    }

    func answer(_ jwt: String, keyID: String = "k1") -> Result<FetchedToken, ProxyFailure> {
        let body = JSONish.object(["keyId": .string(keyID), "signedJwt": .string(jwt)]).jsonText
        return SignJwtAnswer.parse(Array(body.utf8), from: "IAM signJwt")
    }

    func claims(for key: EntityKey) -> FleetEngineClaims {
        FleetEngineClaims(for: key, account: "a@p.iam.gserviceaccount.com", keyID: "", wallNow: 1_000_000, lifetime: 3600)
    }

    func testTheSignedJwtIsTakenWithItsClaimsAndPassesTheClaimCheckForItsEntity() throws {
        let token = try answer(jwt(claims: claims(for: vehicle))).get()
        XCTAssertEqual(token.expiresAt, Double(claims(for: vehicle).expiresAt))
        XCTAssertEqual(token.issuedAt, Double(claims(for: vehicle).issuedAt))
        XCTAssertFalse(token.isOpaqueAccessToken)
        XCTAssertNil(TokenScopeCheck.problem(with: token, for: vehicle, wallNow: 1_000_000))
        let other = EntityKey(provider: "p", type: .vehicle, id: "v2")
        XCTAssertEqual(TokenScopeCheck.problem(with: token, for: other, wallNow: 1_000_000)?.httpStatus, 502,
                       "a JWT for another entity is refused as a provider's would be")
    }

    func testAnAnswerThatCannotBeUsedIsRefusedWithoutTheJwt() {
        let good = jwt(claims: claims(for: vehicle))
        let cases: [Result<FetchedToken, ProxyFailure>] = [
            answer(good, keyID: "other"), answer(jwt(alg: "HS256", claims: claims(for: vehicle))), answer("not.a.jwt"),
            answer(good + " "), SignJwtAnswer.parse(Array(#"{"keyId":"k1"}"#.utf8), from: "IAM signJwt"),
            SignJwtAnswer.parse(Array("<html>".utf8), from: "IAM signJwt"),
        ]
        for result in cases {
            guard case .failure(let failure) = result else { XCTFail("refused"); continue }
            XCTAssertEqual(failure.httpStatus, 502)
            XCTAssertFalse(failure.message.contains("eyJ"), failure.message)
        }
    }
}
