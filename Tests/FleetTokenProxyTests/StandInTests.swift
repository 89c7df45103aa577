import Foundation
import XCTest
@testable import FleetTokenProxy
@testable import FleetTokenProxyStandIns

/// Keys, clocks and helpers the stand-in tests share. They are members of a base class rather
/// than file-level declarations so their names cannot clash with other test files' helpers.
class StandInTestCase: XCTestCase {
    /// Generated once per process: 2048-bit key generation takes a noticeable fraction of a second.
    private static let sharedProviderKey = try! RSAKeyPair.generate()
    private static let sharedStrangerKey = try! RSAKeyPair.generate()

    /// The stand-in provider's key, the one the stand-in Fleet Engine trusts.
    var providerKey: RSAKeyPair { Self.sharedProviderKey }
    /// A key nobody trusts.
    var strangerKey: RSAKeyPair { Self.sharedStrangerKey }
    /// 2025-01-01T00:00:00Z
    let epoch2025 = 1_735_689_600.0

    func vehicle(_ id: String, provider: String = "p") -> EntityKey { EntityKey(provider: provider, type: .vehicle, id: id) }

    func bearer(_ token: String) -> HTTPHeaders { ["Authorization": "Bearer " + token] }

    /// Decodes base64url with Foundation, independently of the code under test.
    func base64URLDecoded(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }

    func jsonObject(_ data: Data) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
    }

    func jsonObject(_ response: HTTPResponse) -> [String: Any]? { jsonObject(Data(response.body)) }

    /// (header, claims) of a compact JWT.
    func decodeJWT(_ token: String) -> (header: [String: Any], claims: [String: Any])? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = base64URLDecoded(parts[0]).flatMap(jsonObject),
              let claims = base64URLDecoded(parts[1]).flatMap(jsonObject)
        else { return nil }
        return (header, claims)
    }

    /// Calls a handler and returns what it answered synchronously, if anything.
    func call(_ handler: HTTPHandler, _ request: HTTPRequest) -> HTTPResponse? {
        var answer: HTTPResponse?
        handler(request) { response in
            XCTAssertNil(answer, "a handler must respond exactly once")
            answer = response
        }
        return answer
    }

    /// Runs scheduled work when the test advances time.
    final class FakeScheduler: Scheduler {
        final class Work: ScheduledWork {
            var cancelled = false
            func cancel() { cancelled = true }
        }

        private(set) var now = 0.0
        private var pending: [(due: Double, handle: Work, work: () -> Void)] = []

        func schedule(after seconds: Double, _ work: @escaping () -> Void) -> ScheduledWork {
            let handle = Work()
            pending.append((now + seconds, handle, work))
            return handle
        }

        func advance(by seconds: Double) {
            now += seconds
            let due = pending.filter { $0.due <= now }.sorted { $0.due < $1.due }
            pending.removeAll { $0.due <= now }
            for entry in due where !entry.handle.cancelled { entry.work() }
        }
    }

    /// A wall clock the test sets.
    final class ManualClock {
        var now: Double
        init(_ now: Double) { self.now = now }
    }

    /// Just enough of docs/CONTRACT.md §3 for the stand-in's own tests; the sidecar's router is tested elsewhere.
    static func classify(method: String, target: String) -> Result<EntityKey, ProxyFailure> {
        let path = target.split(separator: "?", maxSplits: 1)[0]
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard segments.count >= 5, segments[1] == "v1", segments[2] == "providers" else {
            return .failure(.notFleetEngineCall("not a Fleet Engine path"))
        }
        let provider = segments[3]
        if segments.count == 5, segments[4] == "vehicles" { return .success(.fleet(provider: provider)) }
        guard segments.count == 6 else { return .failure(.notFleetEngineCall("not a Fleet Engine path")) }
        switch segments[4] {
        case "vehicles": return .success(EntityKey(provider: provider, type: .vehicle, id: segments[5]))
        case "tasks": return .success(EntityKey(provider: provider, type: .task, id: segments[5]))
        default: return .failure(.notFleetEngineCall("not a Fleet Engine path"))
        }
    }
}

final class RSAKeyPairTests: StandInTestCase {
    func testSignatureVerifiesWithTheKeyPairsPublicKey() throws {
        let data = Array("header.payload".utf8)
        let signature = try providerKey.sign(data)
        XCTAssertEqual(signature.count, 256, "a 2048-bit RSA signature is 256 bytes")
        XCTAssertTrue(providerKey.publicKey.verify(data, signature: signature))
        XCTAssertTrue(try RSAPublicKey(pem: providerKey.publicKeyPEM).verify(data, signature: signature))
    }

    func testTamperedSignatureOrDataFailsVerification() throws {
        let data = Array("header.payload".utf8)
        let signature = try providerKey.sign(data)
        var tampered = signature
        tampered[100] ^= 0x01
        XCTAssertFalse(providerKey.publicKey.verify(data, signature: tampered))
        XCTAssertFalse(providerKey.publicKey.verify(Array("header.payloaD".utf8), signature: signature))
        XCTAssertFalse(providerKey.publicKey.verify(data, signature: Array(signature.dropLast())))
        XCTAssertFalse(strangerKey.publicKey.verify(data, signature: signature), "another key must not verify it")
    }

    func testPrivateKeyPEMReloadsTheSameKeyWithTheGivenKeyID() throws {
        let pem = try providerKey.privateKeyPEM()
        XCTAssertTrue(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let reloaded = try RSAKeyPair(privateKeyPEM: pem, keyID: "kid-1")
        XCTAssertEqual(reloaded.keyID, "kid-1")
        XCTAssertEqual(reloaded.publicKeyPEM, providerKey.publicKeyPEM)
        let data = Array("payload".utf8)
        XCTAssertTrue(providerKey.publicKey.verify(data, signature: try reloaded.sign(data)))
    }

    func testKeyIDIsHexOfEightBytesAndDiffersBetweenKeys() {
        XCTAssertEqual(providerKey.keyID.count, 16)
        XCTAssertTrue(providerKey.keyID.allSatisfy { $0.isHexDigit && !$0.isUppercase })
        XCTAssertNotEqual(providerKey.keyID, strangerKey.keyID)
    }

    func testUnreadablePEMThrowsWithOpenSSLsErrorText() {
        XCTAssertThrowsError(try RSAKeyPair(privateKeyPEM: "-----BEGIN PRIVATE KEY-----\nnot base64\n-----END PRIVATE KEY-----\n")) { error in
            let keyError = error as? RSAKeyError
            XCTAssertNotNil(keyError)
            XCTAssertFalse(keyError?.openSSLErrors.isEmpty ?? true, "OpenSSL's queue text should be carried")
            XCTAssertTrue(String(describing: error).contains("reading an RSA private key"))
        }
        XCTAssertThrowsError(try RSAPublicKey(pem: "garbage"))
    }

    func testGenerateRefusesKeysTooShortForRS256() {
        XCTAssertThrowsError(try RSAKeyPair.generate(bits: 1024))
    }
}

final class JWTMinterTests: StandInTestCase {
    func testBase64URLRoundTripsEveryLengthAndRejectsNonCanonicalText() {
        for length in 0...9 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 37 + 250) }
            let encoded = JWTMinter.Base64URL.encode(bytes)
            XCTAssertFalse(encoded.contains("=") || encoded.contains("+") || encoded.contains("/"))
            XCTAssertEqual(base64URLDecoded(Substring(encoded)).map(Array.init), bytes, "encode(\(bytes))")
            XCTAssertEqual(JWTMinter.Base64URL.decode(encoded), bytes)
        }
        XCTAssertEqual(JWTMinter.Base64URL.encode([0xfb, 0xff]), "-_8")
        XCTAssertNil(JWTMinter.Base64URL.decode("QQ=="), "padding is not base64url in a JWT")
        XCTAssertNil(JWTMinter.Base64URL.decode("a+b/"))
        XCTAssertNil(JWTMinter.Base64URL.decode("QUJDR"), "one dangling character")
        XCTAssertNil(JWTMinter.Base64URL.decode("QR"), "non-zero leftover bits")
    }

    func testMintedTokenCarriesFleetEngineHeaderAndClaims() throws {
        let token = try JWTMinter(keyPair: providerKey).mint(for: vehicle("v1"), issuedAt: epoch2025 + 0.7, lifetime: 1800)
        let decoded = try XCTUnwrap(decodeJWT(token))
        XCTAssertEqual(decoded.header["alg"] as? String, "RS256")
        XCTAssertEqual(decoded.header["typ"] as? String, "JWT")
        XCTAssertEqual(decoded.header["kid"] as? String, providerKey.keyID)
        XCTAssertEqual(decoded.claims["iss"] as? String, "fleet-engine-stand-in@p.iam.gserviceaccount.com")
        XCTAssertEqual(decoded.claims["sub"] as? String, decoded.claims["iss"] as? String)
        XCTAssertEqual(decoded.claims["aud"] as? String, "https://fleetengine.googleapis.com/")
        XCTAssertEqual(decoded.claims["iat"] as? Int, Int(epoch2025))
        XCTAssertEqual(decoded.claims["exp"] as? Int, Int(epoch2025) + 1800)
        XCTAssertEqual(decoded.claims["authorization"] as? [String: String], ["vehicleid": "v1"])
    }

    func testMintedSignatureCoversHeaderAndPayload() throws {
        let token = try JWTMinter(keyPair: providerKey).mint(for: vehicle("v1"), issuedAt: epoch2025)
        let parts = token.split(separator: ".")
        let signature = try XCTUnwrap(base64URLDecoded(parts[2]))
        XCTAssertTrue(providerKey.publicKey.verify(Array("\(parts[0]).\(parts[1])".utf8), signature: Array(signature)))
    }

    func testAuthorizationClaimNamesTheEntityByTypeAndTheFleetByWildcards() throws {
        let minter = JWTMinter(keyPair: providerKey)
        let expected: [(EntityType, String, [String: String])] = [
            (.vehicle, "v1", ["vehicleid": "v1"]),
            (.trip, "t1", ["tripid": "t1"]),
            (.deliveryVehicle, "dv1", ["deliveryvehicleid": "dv1"]),
            (.task, "task1", ["taskid": "task1"]),
            (.tracking, "tr1", ["trackingid": "tr1"]),
            (.fleet, "*", ["vehicleid": "*", "tripid": "*", "deliveryvehicleid": "*", "taskid": "*", "trackingid": "*"]),
        ]
        XCTAssertEqual(expected.count, EntityType.allCases.count)
        for (type, id, claim) in expected {
            let token = try minter.mint(for: EntityKey(provider: "p", type: type, id: id), issuedAt: epoch2025)
            XCTAssertEqual(decodeJWT(token)?.claims["authorization"] as? [String: String], claim, "\(type)")
        }
    }

    func testDeliberatelyWrongClaimsAreMintedAsAsked() throws {
        var claims = JWTMinter.Claims(for: vehicle("v1"), issuedAt: epoch2025)
        claims.authorization = .init(for: vehicle("v2"))
        claims.audience = "https://example.com/"
        claims.expiresAt = claims.issuedAt + 7200
        let decoded = try XCTUnwrap(decodeJWT(try JWTMinter(keyPair: providerKey).mint(claims)))
        XCTAssertEqual(decoded.claims["authorization"] as? [String: String], ["vehicleid": "v2"])
        XCTAssertEqual(decoded.claims["aud"] as? String, "https://example.com/")
        XCTAssertEqual(decoded.claims["exp"] as? Int, Int(epoch2025) + 7200)
    }
}

final class FleetEngineTokenCheckTests: StandInTestCase {
    private var minter: JWTMinter { JWTMinter(keyPair: providerKey) }
    private var check: FleetEngineTokenCheck { FleetEngineTokenCheck(publicKey: providerKey.publicKey, keyID: providerKey.keyID) }
    private var now: Double { epoch2025 + 100 }

    private func verdict(_ claims: JWTMinter.Claims, for entity: EntityKey) throws -> FleetEngineTokenCheck.Verdict {
        check.check(headers: bearer(try minter.mint(claims)), entity: entity, now: now)
    }

    func testMatchingVehicleTokenIsAccepted() throws {
        XCTAssertEqual(try verdict(.init(for: vehicle("v1"), issuedAt: now), for: vehicle("v1")), .ok)
    }

    func testAnotherVehiclesTokenIsPermissionDenied() throws {
        let verdict = try verdict(.init(for: vehicle("v2"), issuedAt: now), for: vehicle("v1"))
        XCTAssertEqual(verdict.reason, .entityNotCovered)
        XCTAssertEqual(verdict.reason?.httpStatus, 403)
        XCTAssertEqual(verdict.reason?.statusName, "PERMISSION_DENIED")
    }

    func testWrongAudienceIsUnauthenticated() throws {
        var claims = JWTMinter.Claims(for: vehicle("v1"), issuedAt: now)
        claims.audience = "https://oauth2.googleapis.com/token"
        let verdict = try verdict(claims, for: vehicle("v1"))
        XCTAssertEqual(verdict.reason, .wrongAudience)
        XCTAssertEqual(verdict.reason?.httpStatus, 401)
        XCTAssertEqual(verdict.reason?.statusName, "UNAUTHENTICATED")
    }

    func testExpiredTokenIsUnauthenticated() throws {
        let claims = JWTMinter.Claims(for: vehicle("v1"), issuedAt: now - 3600)
        XCTAssertEqual(try verdict(claims, for: vehicle("v1")).reason, .expired)
        XCTAssertEqual(FleetEngineTokenCheck.Reason.expired.httpStatus, 401)
        let stillValid = JWTMinter.Claims(for: vehicle("v1"), issuedAt: now - 3599)
        XCTAssertEqual(try verdict(stillValid, for: vehicle("v1")), .ok)
    }

    func testMissingOrNonBearerAuthorizationIsUnauthenticated() {
        XCTAssertEqual(check.check(headers: [:], entity: vehicle("v1"), now: now).reason, .missingToken)
        XCTAssertEqual(check.check(headers: ["Authorization": "Basic dTpw"], entity: vehicle("v1"), now: now).reason, .missingToken)
        XCTAssertEqual(FleetEngineTokenCheck.Reason.missingToken.httpStatus, 401)
    }

    func testBearerSchemeIsCaseInsensitive() throws {
        let token = try minter.mint(for: vehicle("v1"), issuedAt: now)
        XCTAssertEqual(check.check(headers: ["authorization": "bearer " + token], entity: vehicle("v1"), now: now), .ok)
    }

    func testTwoAuthorizationHeadersAreRefused() throws {
        let token = try minter.mint(for: vehicle("v1"), issuedAt: now)
        let headers = HTTPHeaders([(name: "Authorization", value: "Bearer client"), (name: "Authorization", value: "Bearer " + token)])
        XCTAssertEqual(check.check(headers: headers, entity: vehicle("v1"), now: now).reason, .multipleAuthorizationHeaders)
    }

    func testSingleEntityTokenOnFleetCallIsPermissionDenied() throws {
        let fleet = EntityKey.fleet(provider: "p")
        XCTAssertEqual(try verdict(.init(for: vehicle("v1"), issuedAt: now), for: fleet).reason, .entityNotCovered)
        var mixed = JWTMinter.Claims(for: vehicle("v1"), issuedAt: now)
        mixed.authorization = .init(vehicleID: "*", tripID: "t1")
        XCTAssertEqual(try verdict(mixed, for: fleet).reason, .entityNotCovered, "a claim naming one trip is not a fleet token")
        XCTAssertEqual(try verdict(.init(for: fleet, issuedAt: now), for: fleet), .ok)
    }

    func testWildcardClaimCoversEveryEntityOfItsKindOnly() throws {
        var claims = JWTMinter.Claims(for: vehicle("v1"), issuedAt: now)
        claims.authorization = .init(vehicleID: "*")
        XCTAssertEqual(try verdict(claims, for: vehicle("any")), .ok)
        XCTAssertEqual(try verdict(claims, for: EntityKey(provider: "p", type: .trip, id: "t1")).reason, .entityNotCovered)
        XCTAssertEqual(try verdict(.init(for: .fleet(provider: "p"), issuedAt: now), for: EntityKey(provider: "p", type: .task, id: "k")), .ok)
    }

    func testTaskTokenWithTaskidsContainingTheTaskIsAccepted() throws {
        let task = EntityKey(provider: "p", type: .task, id: "task-2")
        var claims = JWTMinter.Claims(for: task, issuedAt: now)
        claims.authorization = .init(taskIDs: ["task-1", "task-2"])
        XCTAssertEqual(try verdict(claims, for: task), .ok)
        claims.authorization = .init(taskIDs: ["task-1", "task-3"])
        XCTAssertEqual(try verdict(claims, for: task).reason, .entityNotCovered)
    }

    func testLifetimeOverAnHourIsRefused() throws {
        var claims = JWTMinter.Claims(for: vehicle("v1"), issuedAt: now)
        claims.expiresAt = claims.issuedAt + 3601
        XCTAssertEqual(try verdict(claims, for: vehicle("v1")).reason, .badLifetime)
        claims.expiresAt = claims.issuedAt + 3600
        XCTAssertEqual(try verdict(claims, for: vehicle("v1")), .ok)
    }

    func testIssuedAtMayBeTenMinutesAheadButNoMore() throws {
        XCTAssertEqual(try verdict(.init(for: vehicle("v1"), issuedAt: now + 600), for: vehicle("v1")), .ok)
        XCTAssertEqual(try verdict(.init(for: vehicle("v1"), issuedAt: now + 602), for: vehicle("v1")).reason, .issuedInFuture)
    }

    func testTokenWithoutExpiryIsMalformed() throws {
        var claims = JWTMinter.Claims(for: vehicle("v1"), issuedAt: now)
        claims.expiresAt = nil
        XCTAssertEqual(try verdict(claims, for: vehicle("v1")).reason, .malformedToken)
    }

    func testTokenSignedByAnotherKeyIsRefused() throws {
        let otherKeyToken = try JWTMinter(keyPair: strangerKey).mint(for: vehicle("v1"), issuedAt: now)
        XCTAssertEqual(check.check(headers: bearer(otherKeyToken), entity: vehicle("v1"), now: now).reason, .unknownKeyID)
        let impostor = try RSAKeyPair(privateKeyPEM: try strangerKey.privateKeyPEM(), keyID: providerKey.keyID)
        let sameKidToken = try JWTMinter(keyPair: impostor).mint(for: vehicle("v1"), issuedAt: now)
        XCTAssertEqual(check.check(headers: bearer(sameKidToken), entity: vehicle("v1"), now: now).reason, .badSignature)
    }

    func testPayloadSwappedUnderAValidSignatureIsRefused() throws {
        let mine = try minter.mint(for: vehicle("v1"), issuedAt: now).split(separator: ".")
        let theirs = try minter.mint(for: vehicle("v2"), issuedAt: now).split(separator: ".")
        let spliced = "\(mine[0]).\(theirs[1]).\(mine[2])"
        XCTAssertEqual(check.check(headers: bearer(spliced), entity: vehicle("v2"), now: now).reason, .badSignature)
    }

    func testTokenOfAnotherProjectsServiceAccountIsPermissionDenied() throws {
        let verdict = try verdict(.init(for: vehicle("v1", provider: "other-project"), issuedAt: now), for: vehicle("v1", provider: "p"))
        XCTAssertEqual(verdict.reason, .wrongProject)
        XCTAssertEqual(verdict.reason?.httpStatus, 403)
    }

    func testMalformedTokensAreUnauthenticated() throws {
        let token = try minter.mint(for: vehicle("v1"), issuedAt: now)
        let parts = token.split(separator: ".")
        let noneHeader = JWTMinter.Base64URL.encode(Array(#"{"alg":"none","typ":"JWT"}"#.utf8))
        let cases: [(String, FleetEngineTokenCheck.Reason)] = [
            ("\(parts[0]).\(parts[1])", .malformedToken),
            ("\(parts[0]).\(parts[1]).\(parts[2]).x", .malformedToken),
            ("\(parts[0]).not*base64.\(parts[2])", .malformedToken),
            ("\(noneHeader).\(parts[1]).", .unsupportedAlgorithm),
            ("", .malformedToken),
        ]
        for (text, reason) in cases {
            let verdict = check.check(headers: bearer(text), entity: vehicle("v1"), now: now)
            XCTAssertEqual(verdict.reason, reason, text)
            XCTAssertEqual(verdict.reason?.httpStatus, 401, text)
        }
    }
}

final class StandInFleetEngineTests: StandInTestCase {
    private var minter: JWTMinter { JWTMinter(keyPair: providerKey) }
    private lazy var clock = ManualClock(epoch2025)

    private func makeEngine() -> StandInFleetEngine {
        StandInFleetEngine(
            publicKey: providerKey.publicKey, keyID: providerKey.keyID,
            classify: Self.classify, wallClock: { [clock] in clock.now })
    }

    func testValidCallGets200EchoingTheResourceAndTheRequestBodyLength() throws {
        let engine = makeEngine()
        let token = try minter.mint(for: vehicle("v1"), issuedAt: clock.now)
        let response = try XCTUnwrap(call(engine.handler, HTTPRequest(
            method: "PUT", target: "/v1/providers/p/vehicles/v1?updateMask=state", headers: bearer(token), body: Array("{\"state\":1}".utf8))))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(jsonObject(response) as? [String: String], ["name": "providers/p/vehicles/v1"])
        XCTAssertEqual(response.headers["Content-Type"], "application/json")
        XCTAssertEqual(response.headers["x-standin-request-bytes"], "11")
        XCTAssertEqual(engine.statistics.accepted, 1)
        XCTAssertEqual(engine.statistics.acceptedByEntity, [vehicle("v1"): 1])
    }

    func testRefusedCallGetsGoogleErrorJSONThatNeverContainsTheToken() throws {
        let engine = makeEngine()
        let token = try minter.mint(for: vehicle("v2"), issuedAt: clock.now)
        let response = try XCTUnwrap(call(engine.handler, HTTPRequest(method: "GET", target: "/v1/providers/p/vehicles/v1", headers: bearer(token))))
        XCTAssertEqual(response.status, 403)
        let error = try XCTUnwrap(jsonObject(response)?["error"] as? [String: Any])
        XCTAssertEqual(error["code"] as? Int, 403)
        XCTAssertEqual(error["status"] as? String, "PERMISSION_DENIED")
        XCTAssertTrue((error["message"] as? String)?.contains("vehicle v1") ?? false)
        let text = String(decoding: response.body, as: UTF8.self)
        for part in token.split(separator: ".") { XCTAssertFalse(text.contains(part), "the token leaked into the error") }
        XCTAssertFalse(response.headers.contains { $0.value.contains(token) })
        XCTAssertEqual(engine.statistics.rejected, 1)
        XCTAssertEqual(engine.statistics.rejectionsByReason, ["entity_not_covered": 1])
    }

    func testExpiredTokenIsAnswered401Unauthenticated() throws {
        let engine = makeEngine()
        let token = try minter.mint(for: vehicle("v1"), issuedAt: clock.now)
        clock.now += 3600
        let response = try XCTUnwrap(call(engine.handler, HTTPRequest(method: "GET", target: "/v1/providers/p/vehicles/v1", headers: bearer(token))))
        XCTAssertEqual(response.status, 401)
        XCTAssertEqual((jsonObject(response)?["error"] as? [String: Any])?["status"] as? String, "UNAUTHENTICATED")
        XCTAssertEqual(engine.statistics.rejectionsByReason, ["expired": 1])
    }

    func testBigVehicleIsAnsweredWithExactlyOneMebibyteOfJSON() throws {
        let engine = makeEngine()
        let token = try minter.mint(for: vehicle("big-1"), issuedAt: clock.now)
        let response = try XCTUnwrap(call(engine.handler, HTTPRequest(method: "GET", target: "/v1/providers/p/vehicles/big-1", headers: bearer(token))))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.body.count, 1 << 20)
        XCTAssertEqual(jsonObject(response)?["name"] as? String, "providers/p/vehicles/big-1")
    }

    func testUnroutableCallGetsTheClassifiersErrorAndIsCounted() {
        let engine = makeEngine()
        let response = call(engine.handler, HTTPRequest(method: "GET", target: "/admin/secrets"))
        XCTAssertEqual(response?.status, 404)
        XCTAssertEqual((response.flatMap(jsonObject)?["error"] as? [String: Any])?["status"] as? String, "NOT_FOUND")
        XCTAssertEqual(engine.statistics.rejectionsByReason, ["unroutable": 1])
        XCTAssertEqual(engine.statistics.callsByEntityType, [:])
    }

    func testCallsAreCountedByEntityTypeWhetherAcceptedOrNot() throws {
        let engine = makeEngine()
        let fleetToken = try minter.mint(for: .fleet(provider: "p"), issuedAt: clock.now)
        let taskToken = try minter.mint(for: EntityKey(provider: "p", type: .task, id: "k1"), issuedAt: clock.now)
        let requests = [
            HTTPRequest(method: "GET", target: "/v1/providers/p/vehicles", headers: bearer(fleetToken)),
            HTTPRequest(method: "GET", target: "/v1/providers/p/tasks/k1", headers: bearer(taskToken)),
            HTTPRequest(method: "GET", target: "/v1/providers/p/tasks/k2", headers: bearer(taskToken)),
        ]
        let statuses = requests.map { call(engine.handler, $0)?.status }
        XCTAssertEqual(statuses, [200, 200, 403])
        XCTAssertEqual(engine.statistics.callsByEntityType, [.fleet: 1, .task: 2])
        XCTAssertEqual(engine.statistics.accepted, 2)
        XCTAssertEqual(engine.statistics.rejected, 1)
    }
}

final class StandInProviderTests: StandInTestCase {
    private let scheduler = FakeScheduler()
    private lazy var clock = ManualClock(epoch2025 + 0.25)
    private var check: FleetEngineTokenCheck { FleetEngineTokenCheck(publicKey: providerKey.publicKey, keyID: providerKey.keyID) }

    private func makeProvider() -> StandInProvider {
        StandInProvider(keyPair: providerKey, scheduler: scheduler, wallClock: { [clock] in clock.now })
    }

    private func fetch(_ provider: StandInProvider, _ target: String, headers: HTTPHeaders = [:]) -> HTTPResponse? {
        call(provider.handler, HTTPRequest(method: "GET", target: target, headers: headers))
    }

    private func token(in response: HTTPResponse?) -> String? {
        response.flatMap(jsonObject)?["token"] as? String
    }

    func testNormalAnswerIsAFleetEngineTokenForExactlyTheEntityAsked() throws {
        let provider = makeProvider()
        let response = try XCTUnwrap(fetch(provider, "/token/p/vehicle/v1"))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.headers["Content-Type"], "application/json")
        let jwt = try XCTUnwrap(token(in: response))
        XCTAssertEqual(check.check(token: jwt, entity: vehicle("v1"), now: clock.now), .ok)
        XCTAssertEqual(check.check(token: jwt, entity: vehicle("v2"), now: clock.now).reason, .entityNotCovered)
        XCTAssertEqual(jsonObject(response)?["expirationTimestamp"] as? Int, Int(epoch2025) + 3600)
    }

    func testEveryEntityTypeGetsAMatchingToken() throws {
        let provider = makeProvider()
        let paths: [(String, EntityKey)] = [
            ("/token/p/vehicle/v1", vehicle("v1")),
            ("/token/p/trip/t1", EntityKey(provider: "p", type: .trip, id: "t1")),
            ("/token/p/delivery_vehicle/d1", EntityKey(provider: "p", type: .deliveryVehicle, id: "d1")),
            ("/token/p/task/k1", EntityKey(provider: "p", type: .task, id: "k1")),
            ("/token/p/tracking/r1", EntityKey(provider: "p", type: .tracking, id: "r1")),
            ("/token/p/fleet/%2A", .fleet(provider: "p")),
            ("/token/p/fleet/*", .fleet(provider: "p")),
        ]
        for (path, entity) in paths {
            let jwt = try XCTUnwrap(token(in: fetch(provider, path)), path)
            XCTAssertEqual(check.check(token: jwt, entity: entity, now: clock.now), .ok, path)
        }
    }

    func testSegmentsArePercentDecoded() throws {
        let provider = makeProvider()
        let jwt = try XCTUnwrap(token(in: fetch(provider, "/token/my%2Dproject/vehicle/caf%C3%A9%20%231?x=1")))
        XCTAssertEqual(decodeJWT(jwt)?.claims["authorization"] as? [String: String], ["vehicleid": "café #1"])
        XCTAssertEqual(provider.fetchesByEntity, [EntityKey(provider: "my-project", type: .vehicle, id: "café #1"): 1])
    }

    func testBadPathsAre404AndNotCounted() {
        let provider = makeProvider()
        let bad = [
            "/", "/token", "/token/p/vehicle", "/token/p/vehicle/", "/token//vehicle/v1", "/token/p/car/v1",
            "/token/p/vehicle/v1/extra", "/tokens/p/vehicle/v1", "/token/p/fleet/v1", "/token/p/vehicle/bad%2",
            "/token/p/vehicle/%FF", "/token/p/Vehicle/v1",
        ]
        for path in bad {
            XCTAssertEqual(fetch(provider, path)?.status, 404, path)
        }
        XCTAssertEqual(provider.totalFetches, 0)
    }

    func testOnlyGETIsServed() {
        let provider = makeProvider()
        let response = call(provider.handler, HTTPRequest(method: "POST", target: "/token/p/vehicle/v1"))
        XCTAssertEqual(response?.status, 405)
        XCTAssertEqual(response?.headers["Allow"], "GET")
    }

    func testRequiredHeaderMissingOrWrongIs401() {
        let provider = makeProvider()
        provider.requiredHeader = (name: "X-Backend-Key", value: "s3cret")
        XCTAssertEqual(fetch(provider, "/token/p/vehicle/v1")?.status, 401)
        XCTAssertEqual(fetch(provider, "/token/p/vehicle/v1", headers: ["X-Backend-Key": "guess"])?.status, 401)
        XCTAssertEqual(fetch(provider, "/token/p/vehicle/v1", headers: ["x-backend-key": "s3cret"])?.status, 200)
        XCTAssertEqual(provider.totalFetches, 1, "refused requests are not fetches")
    }

    func testEachExpiryStyleUsesItsFieldAndAgreesWithTheTokensExp() throws {
        let provider = makeProvider()
        provider.tokenLifetime = 1800
        let exp = Int(epoch2025) + 1800
        let expected: [(StandInProvider.ExpiryStyle, String, Any)] = [
            (.epochSeconds, "expirationTimestamp", exp),
            (.epochMilliseconds, "expiration", exp * 1000),
            (.relativeSeconds, "expiresInSeconds", 1799),  // the clock is 0.25 s past iat
            (.rfc3339, "expires_at", "2025-01-01T00:30:00Z"),
        ]
        XCTAssertEqual(expected.count, StandInProvider.ExpiryStyle.allCases.count)
        for (style, field, value) in expected {
            provider.expiryStyle = style
            let body = try XCTUnwrap(fetch(provider, "/token/p/vehicle/v1").flatMap(jsonObject))
            XCTAssertEqual(Set(body.keys), ["token", field], "\(style)")
            XCTAssertEqual(body[field] as? NSObject, value as? NSObject, "\(style)")
            XCTAssertEqual(decodeJWT(body["token"] as? String ?? "")?.claims["exp"] as? Int, exp, "\(style)")
        }
    }

    func testRFC3339FormatsLeapDayAndEpoch() {
        XCTAssertEqual(StandInProvider.rfc3339(0), "1970-01-01T00:00:00Z")
        XCTAssertEqual(StandInProvider.rfc3339(1_709_217_045), "2024-02-29T14:30:45Z")
    }

    func testTokenAndExpiryFieldNamesCanBeChanged() throws {
        let provider = makeProvider()
        provider.tokenField = "jwt"
        provider.expiryFieldOverride = "TOKEN_EXPIRATION"
        let body = try XCTUnwrap(fetch(provider, "/token/p/vehicle/v1").flatMap(jsonObject))
        XCTAssertEqual(Set(body.keys), ["jwt", "TOKEN_EXPIRATION"])
    }

    func testDelayAnswersOnlyWhenTheSchedulerRuns() throws {
        let provider = makeProvider()
        provider.behaviour = .delay(2)
        var answer: HTTPResponse?
        provider.handler(HTTPRequest(method: "GET", target: "/token/p/vehicle/v1")) { answer = $0 }
        XCTAssertNil(answer, "must not answer before the delay")
        XCTAssertEqual(provider.totalFetches, 1)
        scheduler.advance(by: 1.9)
        XCTAssertNil(answer)
        clock.now += 2
        scheduler.advance(by: 0.1)
        XCTAssertEqual(answer?.status, 200)
        let jwt = try XCTUnwrap(token(in: answer))
        XCTAssertEqual(decodeJWT(jwt)?.claims["iat"] as? Int, Int(epoch2025) + 2, "minted when answered")
    }

    func testStatusBehaviourAnswersThatStatus() {
        let provider = makeProvider()
        for status in [403, 500, 503] {
            provider.behaviour = .status(status)
            let response = fetch(provider, "/token/p/vehicle/v1")
            XCTAssertEqual(response?.status, status)
            XCTAssertNil(token(in: response))
        }
        XCTAssertEqual(provider.totalFetches, 3)
    }

    func testGarbageBehaviourAnswers200ThatIsNotJSON() throws {
        let provider = makeProvider()
        provider.behaviour = .garbage
        let response = try XCTUnwrap(fetch(provider, "/token/p/vehicle/v1"))
        XCTAssertEqual(response.status, 200)
        XCTAssertThrowsError(try JSONSerialization.jsonObject(with: Data(response.body)))
    }

    func testNoTokenBehaviourHasAnExpiryButNoTokenField() throws {
        let provider = makeProvider()
        provider.behaviour = .noToken
        let body = try XCTUnwrap(fetch(provider, "/token/p/vehicle/v1").flatMap(jsonObject))
        XCTAssertEqual(Array(body.keys), ["expirationTimestamp"])
    }

    func testNoExpiryBehaviourGivesNeitherExpiryFieldNorExpClaim() throws {
        let provider = makeProvider()
        provider.behaviour = .noExpiry
        let body = try XCTUnwrap(fetch(provider, "/token/p/vehicle/v1").flatMap(jsonObject))
        XCTAssertEqual(Array(body.keys), ["token"])
        let claims = try XCTUnwrap(decodeJWT(body["token"] as? String ?? "")?.claims)
        XCTAssertNil(claims["exp"])
        XCTAssertNotNil(claims["iat"])
    }

    func testExpiredBehaviourGivesATokenAndExpiryAlreadyPast() throws {
        let provider = makeProvider()
        provider.behaviour = .expired
        let body = try XCTUnwrap(fetch(provider, "/token/p/vehicle/v1").flatMap(jsonObject))
        XCTAssertLessThan(try XCTUnwrap(body["expirationTimestamp"] as? Int), Int(clock.now))
        XCTAssertEqual(check.check(token: body["token"] as? String ?? "", entity: vehicle("v1"), now: clock.now).reason, .expired)
    }

    func testWrongEntityBehaviourGivesAValidTokenForSomeoneElse() throws {
        let provider = makeProvider()
        provider.behaviour = .wrongEntity
        let jwt = try XCTUnwrap(token(in: fetch(provider, "/token/p/vehicle/v1")))
        XCTAssertEqual(check.check(token: jwt, entity: vehicle("v1"), now: clock.now).reason, .entityNotCovered)
        let fleetJWT = try XCTUnwrap(token(in: fetch(provider, "/token/p/fleet/*")))
        XCTAssertEqual(check.check(token: fleetJWT, entity: .fleet(provider: "p"), now: clock.now).reason, .entityNotCovered)
    }

    func testWrongAudienceBehaviourGivesATokenFleetEngineRefuses() throws {
        let provider = makeProvider()
        provider.behaviour = .wrongAudience
        let jwt = try XCTUnwrap(token(in: fetch(provider, "/token/p/vehicle/v1")))
        XCTAssertEqual(check.check(token: jwt, entity: vehicle("v1"), now: clock.now).reason, .wrongAudience)
    }

    func testTokenLifetimeSetsExpMinusIat() throws {
        let provider = makeProvider()
        provider.tokenLifetime = 120
        let claims = try XCTUnwrap(decodeJWT(try XCTUnwrap(token(in: fetch(provider, "/token/p/vehicle/v1"))))?.claims)
        XCTAssertEqual((claims["exp"] as? Int).map { $0 - (claims["iat"] as? Int ?? 0) }, 120)
    }

    func testFetchesAreCountedPerEntity() {
        let provider = makeProvider()
        for path in ["/token/p/vehicle/v1", "/token/p/vehicle/v1", "/token/p/trip/v1", "/token/q/vehicle/v1", "/token/p/nope/v1"] {
            _ = fetch(provider, path)
        }
        XCTAssertEqual(provider.fetchesByEntity, [
            vehicle("v1"): 2,
            EntityKey(provider: "p", type: .trip, id: "v1"): 1,
            vehicle("v1", provider: "q"): 1,
        ])
        XCTAssertEqual(provider.totalFetches, 4)
    }
}
