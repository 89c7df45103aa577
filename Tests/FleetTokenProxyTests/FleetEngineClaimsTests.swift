@testable import FleetTokenProxyStandIns
import XCTest
@testable import FleetTokenProxy

/// The JWTs `--signer key-file:` mints (docs/CONTRACT.md §2, §4a): header, claims per token
/// type, `iat` back-dating and lifetime, and a signature the account's public key verifies.
final class FleetEngineClaimsTests: XCTestCase {
    let account = "signer@p.iam.gserviceaccount.com"
    let now = 1_800_000_000.5

    func vehicle(_ id: String) -> EntityKey { EntityKey(provider: "p", type: .vehicle, id: id) }

    /// The token's three parts, the first two as JSON.
    func parts(_ token: String) throws -> (header: [String: JSONish], claims: [String: JSONish], signature: [UInt8]) {
        let pieces = token.split(separator: ".", omittingEmptySubsequences: false)
        XCTAssertEqual(pieces.count, 3)
        func object(_ part: Substring) throws -> [String: JSONish] {
            guard case .object(let members)? = JSONish.parse(try XCTUnwrap(Base64URL.decode(Array(part.utf8)))) else {
                throw XCTSkip("not a JSON object")
            }
            return members
        }
        return (try object(pieces[0]), try object(pieces[1]), try XCTUnwrap(Base64URL.decode(Array(pieces[2].utf8))))
    }

    func testHeaderNamesRS256TheJWTTypeAndTheKeyID() throws {
        let claims = FleetEngineClaims(for: vehicle("v1"), account: account, keyID: "kid-7", wallNow: now, lifetime: 3600)
        let header = try parts(claims.signingInput + ".AAAA").header
        XCTAssertEqual(header, ["alg": .string("RS256"), "typ": .string("JWT"), "kid": .string("kid-7")])
    }

    func testClaimsNameTheAccountFleetEngineAndABackdatedLifetime() throws {
        let claims = FleetEngineClaims(for: vehicle("v1"), account: account, keyID: "k", wallNow: now, lifetime: 600)
        let payload = try parts(claims.signingInput + ".AAAA").claims
        XCTAssertEqual(payload["iss"], .string(account))
        XCTAssertEqual(payload["sub"], .string(account))
        XCTAssertEqual(payload["aud"], .string("https://fleetengine.googleapis.com/"))
        XCTAssertEqual(payload["iat"], .number(1_800_000_000 - 60), "iat is back-dated a minute, whole seconds")
        XCTAssertEqual(payload["exp"], .number(1_800_000_000 - 60 + 600), "exp - iat is the lifetime")
        XCTAssertEqual(payload["authorization"], .object(["vehicleid": .string("v1")]))
    }

    func testAShortLifetimeIsBackdatedATenthOfItSoTheTokenStillLives() {
        let short = FleetEngineClaims(for: vehicle("v1"), account: account, keyID: "k", wallNow: now, lifetime: 60)
        XCTAssertEqual(short.issuedAt, 1_800_000_000 - 6)
        XCTAssertEqual(short.expiresAt - short.issuedAt, 60)
        XCTAssertGreaterThan(Double(short.expiresAt) - now, 50)
        let hour = FleetEngineClaims(for: vehicle("v1"), account: account, keyID: "k", wallNow: now, lifetime: 3600)
        XCTAssertEqual(hour.issuedAt, 1_800_000_000 - 60)
        XCTAssertEqual(hour.expiresAt - hour.issuedAt, 3600)
    }

    func testEachTokenTypeGetsTheAuthorizationItsCallsNeed() {
        func claim(_ type: EntityType, _ id: String = "e-1") -> [String: JSONish] {
            FleetEngineClaims.authorization(for: EntityKey(provider: "p", type: type, id: id))
        }
        XCTAssertEqual(claim(.vehicle), ["vehicleid": .string("e-1")])
        XCTAssertEqual(claim(.trip), ["tripid": .string("e-1")])
        XCTAssertEqual(claim(.deliveryVehicle), ["deliveryvehicleid": .string("e-1")])
        XCTAssertEqual(claim(.task), ["taskid": .string("e-1")])
        XCTAssertEqual(claim(.tracking), ["trackingid": .string("e-1")])
        let fleet = claim(.fleet, "*")
        XCTAssertEqual(fleet["taskids"], .array([.string("*")]), "BatchCreateTasks needs the taskids wildcard")
        for member in ["vehicleid", "tripid", "deliveryvehicleid", "taskid", "trackingid"] {
            XCTAssertEqual(fleet[member], .string("*"), member)
        }
    }

    func testEveryMintedTokenPassesTheCachesScopeCheckAndTheStandInFleetEngine() throws {
        let pair = try RSAKeyPair.generate()
        let credential = try SigningCredential(ServiceAccountKey(
            clientEmail: account, privateKeyID: pair.keyID, privateKeyPEM: try pair.privateKeyPEM()))
        let check = FleetEngineTokenCheck(trustedKeys: [.init(account: account, keyID: pair.keyID, publicKey: pair.publicKey)])
        for type in EntityType.allCases {
            let key = EntityKey(provider: "p", type: type, id: type == .fleet ? "*" : "id-1")
            let fetched = try credential.mint(for: key, wallNow: now, lifetime: 3600).get()
            XCTAssertNil(TokenScopeCheck.problem(with: fetched, for: key, wallNow: now), "\(type)")
            XCTAssertEqual(fetched.claims, JWTClaims.decode(fetched.token), "the claims carried are the token's")
            XCTAssertEqual(fetched.expiresAt - (fetched.issuedAt ?? 0), 3600)
            XCTAssertEqual(check.check(token: fetched.token, entity: key, now: now), .ok, "\(type)")
            // Another entity of the type is not covered.
            if type != .fleet {
                XCTAssertEqual(check.check(token: fetched.token, entity: EntityKey(provider: "p", type: type, id: "id-2"), now: now).reason,
                               .entityNotCovered)
            }
        }
    }

    func testATokenSignedWithAnotherKeyOrForAnotherAudienceIsRefused() throws {
        let pair = try RSAKeyPair.generate()
        let stranger = try RSAKeyPair(privateKeyPEM: try RSAKeyPair.generate().privateKeyPEM(), keyID: pair.keyID)
        let check = FleetEngineTokenCheck(trustedKeys: [.init(account: account, keyID: pair.keyID, publicKey: pair.publicKey)])
        let impostor = try SigningCredential(ServiceAccountKey(
            clientEmail: account, privateKeyID: pair.keyID, privateKeyPEM: try stranger.privateKeyPEM()))
        let token = try impostor.mint(for: vehicle("v1"), wallNow: now, lifetime: 3600).get().token
        XCTAssertEqual(check.check(token: token, entity: vehicle("v1"), now: now).reason, .badSignature)

        var claims = FleetEngineClaims(for: vehicle("v1"), account: "other@p.iam.gserviceaccount.com", keyID: pair.keyID, wallNow: now, lifetime: 3600)
        claims.account = "other@p.iam.gserviceaccount.com"
        let input = claims.signingInput
        let foreign = input + "." + Base64URL.encode(try pair.sign(Array(input.utf8)))
        XCTAssertEqual(check.check(token: foreign, entity: vehicle("v1"), now: now).reason, .unknownKeyID,
                       "the key is trusted for its own account only")
    }

    func testBase64URLEncodesWithoutPaddingAndRoundTrips() {
        XCTAssertEqual(Base64URL.encode([]), "")
        XCTAssertEqual(Base64URL.encode([0x66]), "Zg")
        XCTAssertEqual(Base64URL.encode([0x66, 0x6f]), "Zm8")
        XCTAssertEqual(Base64URL.encode([0x66, 0x6f, 0x6f]), "Zm9v")
        XCTAssertEqual(Base64URL.encode([0xfb, 0xff, 0xfe]), "-__-")
        for count in 1..<40 {
            let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            XCTAssertEqual(Base64URL.decode(Array(Base64URL.encode(bytes).utf8)), bytes)
        }
    }
}
