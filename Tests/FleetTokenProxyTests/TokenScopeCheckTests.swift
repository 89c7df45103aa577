import XCTest
@testable import FleetTokenProxy

/// A provider answer is used only for the entity it was fetched for, only for Fleet Engine,
/// and only if it lives no longer than Fleet Engine allows.
final class TokenScopeCheckTests: XCTestCase {
    let wall = 1_800_000_000.0

    private func token(aud: String? = #""https://fleetengine.googleapis.com/""#, exp: Double? = nil,
                       authorization: String) -> FetchedToken {
        var claims = [#""iss":"sa@p.iam.gserviceaccount.com""#, #""iat":\#(Int(wall))"#]
        claims.append(#""exp":\#(Int(exp ?? wall + 3600))"#)
        if let aud { claims.append(#""aud":\#(aud)"#) }
        claims.append(#""authorization":\#(authorization)"#)
        let jwt = makeJWT(payload: "{" + claims.joined(separator: ",") + "}")
        return FetchedToken(token: jwt, expiresAt: exp ?? wall + 3600, issuedAt: wall)
    }

    private func problem(_ token: FetchedToken, _ key: EntityKey) -> String? {
        TokenScopeCheck.problem(with: token, for: key, wallNow: wall)?.message
    }

    private func key(_ type: EntityType, _ id: String) -> EntityKey {
        EntityKey(provider: "proj", type: type, id: id)
    }

    func testTokenForTheEntityAskedForIsAccepted() {
        let cases: [(String, EntityKey)] = [
            (#"{"vehicleid":"a"}"#, key(.vehicle, "a")),
            (#"{"tripid":"t1"}"#, key(.trip, "t1")),
            (#"{"deliveryvehicleid":"dv"}"#, key(.deliveryVehicle, "dv")),
            (#"{"taskid":"k"}"#, key(.task, "k")),
            (#"{"taskids":["x","k","y"]}"#, key(.task, "k")),
            (#"{"trackingid":"tr"}"#, key(.tracking, "tr")),
            (#"{"vehicleid":"*"}"#, key(.vehicle, "any")),
            (#"{"taskids":["*"]}"#, key(.task, "any")),
            (#"{"vehicleid":"*","tripid":"*"}"#, .fleet(provider: "proj")),
            (#"{"deliveryvehicleid":"*"}"#, .fleet(provider: "proj")),
            (#"{"vehicleid":"a","tripid":"t1"}"#, key(.trip, "t1")),
        ]
        for (claim, entity) in cases {
            XCTAssertNil(problem(token(authorization: claim), entity), "\(claim) for \(entity)")
        }
    }

    func testTokenForAnotherEntityIsRefusedNamingBoth() {
        XCTAssertEqual(problem(token(authorization: #"{"vehicleid":"b"}"#), key(.vehicle, "a")),
                       #"token provider answered a token for vehicle "b" when asked for vehicle "a""#)
        XCTAssertEqual(problem(token(authorization: #"{"tripid":"a"}"#), key(.vehicle, "a")),
                       #"token provider answered a token for trip "a" when asked for vehicle "a""#)
        XCTAssertEqual(problem(token(authorization: #"{"taskids":["x","y"]}"#), key(.task, "k")),
                       #"token provider answered a token for task "x" when asked for task "k""#)
        XCTAssertEqual(problem(token(authorization: #"{"vehicleid":"someone-else"}"#), .fleet(provider: "proj")),
                       #"token provider answered a token for vehicle "someone-else" when asked for the fleet (a "*" claim)"#)
        XCTAssertEqual(problem(token(authorization: #"{}"#), key(.tracking, "tr")),
                       #"token provider answered a token for no entity (no usable authorization claim) when asked for tracking "tr""#)
        XCTAssertNotNil(problem(token(authorization: #"{"trackingid":"tr2"}"#), key(.tracking, "tr")))
        XCTAssertNotNil(problem(token(authorization: #"{"deliveryvehicleid":"a"}"#), key(.vehicle, "a")))
        XCTAssertNotNil(problem(token(authorization: #"{"vehicleid":"A"}"#), key(.vehicle, "a")), "ids are case-sensitive")
    }

    func testTokenWithoutAnAuthorizationClaimIsRefused() {
        var jwt = token(authorization: "null")
        jwt.token = makeJWT(payload: #"{"aud":"https://fleetengine.googleapis.com/","exp":\#(Int(wall + 3600))}"#)
        XCTAssertNotNil(problem(jwt, key(.vehicle, "a")))
    }

    func testAudienceMustBeFleetEngineWithOrWithoutTheSlash() {
        XCTAssertNil(problem(token(aud: #""https://fleetengine.googleapis.com""#, authorization: #"{"vehicleid":"a"}"#), key(.vehicle, "a")))
        XCTAssertNil(problem(token(aud: #"["x","https://fleetengine.googleapis.com/"]"#, authorization: #"{"vehicleid":"a"}"#), key(.vehicle, "a")))
        XCTAssertEqual(
            problem(token(aud: #""https://oauth2.googleapis.com/token""#, authorization: #"{"vehicleid":"a"}"#), key(.vehicle, "a")),
            #"token provider answered a token for audience "https://oauth2.googleapis.com/token" when asked for one for Fleet Engine ("https://fleetengine.googleapis.com/")"#)
        XCTAssertNotNil(problem(token(aud: nil, authorization: #"{"vehicleid":"a"}"#), key(.vehicle, "a")))
        XCTAssertNotNil(problem(token(aud: #""https://fleetengine.googleapis.com//""#, authorization: #"{"vehicleid":"a"}"#), key(.vehicle, "a")))
    }

    func testExpiryMoreThanAnHourAndTenMinutesAheadIsRefused() {
        XCTAssertNil(problem(token(exp: wall + 4200, authorization: #"{"vehicleid":"a"}"#), key(.vehicle, "a")))
        let message = problem(token(exp: wall + 4201, authorization: #"{"vehicleid":"a"}"#), key(.vehicle, "a"))
        XCTAssertEqual(message, "token provider answered a token that expires in 4201 s; Fleet Engine tokens live at most an hour (at most 4200 s accepted)")
    }

    func testOpaqueTokenIsNotChecked() {
        let opaque = FetchedToken(token: "ya29.opaque-token", expiresAt: wall + 86_400)
        XCTAssertNil(TokenScopeCheck.problem(with: opaque, for: key(.vehicle, "a"), wallNow: wall))
    }

    func testRefusalNeverContainsTheToken() {
        let wrong = token(aud: #""elsewhere""#, authorization: #"{"vehicleid":"b"}"#)
        let message = problem(wrong, key(.vehicle, "a")) ?? ""
        XCTAssertFalse(message.isEmpty)
        for part in wrong.token.split(separator: ".") { XCTAssertFalse(message.contains(part)) }
    }

    func testClaimsCarriedFromTheAnswerAreTheOnesChecked() throws {
        // The fetch decoded the claims once; the check reads those, not the token again.
        let fetched = token(authorization: #"{"vehicleid":"a"}"#)
        var carried = fetched
        carried.claims = JWTClaims(exp: wall + 3600, aud: [TokenScopeCheck.audience], authorization: ["vehicleid": .string("b")])
        XCTAssertNil(problem(fetched, key(.vehicle, "a")))
        XCTAssertNotNil(problem(carried, key(.vehicle, "a")))
        XCTAssertNil(problem(carried, key(.vehicle, "b")))
    }
}
