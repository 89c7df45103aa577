import Foundation
import XCTest
@testable import FleetTokenProxy

final class JWTClaimsTests: XCTestCase {
    func testDecodesExpIatAudienceAndAuthorization() throws {
        let token = makeJWT(payload: #"""
            {"iss":"sa@p.iam.gserviceaccount.com","aud":"https://fleetengine.googleapis.com/",
             "iat":1800000000,"exp":1800003600,"authorization":{"vehicleid":"v-42","tripid":"*"}}
            """#)
        let claims = try XCTUnwrap(JWTClaims.decode(token))
        XCTAssertEqual(claims.exp, 1_800_003_600)
        XCTAssertEqual(claims.iat, 1_800_000_000)
        XCTAssertEqual(claims.aud, ["https://fleetengine.googleapis.com/"])
        XCTAssertEqual(claims.authorization, ["vehicleid": .string("v-42"), "tripid": .string("*")])
        XCTAssertEqual(claims.authorizedIDs("vehicleid"), ["v-42"])
        XCTAssertEqual(claims.authorizedIDs("tripid"), ["*"])
    }

    func testAudienceArrayIsKeptAsList() throws {
        let claims = try XCTUnwrap(JWTClaims.decode(makeJWT(payload: #"{"aud":["a","b"],"exp":5}"#)))
        XCTAssertEqual(claims.aud, ["a", "b"])
    }

    func testTaskIDsArrayIsReadAsIDs() throws {
        let claims = try XCTUnwrap(JWTClaims.decode(makeJWT(payload: #"{"authorization":{"taskids":["t1","t2"]}}"#)))
        XCTAssertEqual(claims.authorizedIDs("taskids"), ["t1", "t2"])
        XCTAssertEqual(claims.authorizedIDs("taskid"), [])
    }

    func testMissingClaimsAreAbsentNotZero() throws {
        let claims = try XCTUnwrap(JWTClaims.decode(makeJWT(payload: "{}")))
        XCTAssertNil(claims.exp)
        XCTAssertNil(claims.iat)
        XCTAssertEqual(claims.aud, [])
        XCTAssertEqual(claims.authorization, [:])
    }

    func testNonNumericExpIsTreatedAsAbsent() throws {
        let claims = try XCTUnwrap(JWTClaims.decode(makeJWT(payload: #"{"exp":"1800000000","iat":true}"#)))
        XCTAssertNil(claims.exp)
        XCTAssertNil(claims.iat)
    }

    func testFractionalExpIsKept() throws {
        let claims = try XCTUnwrap(JWTClaims.decode(makeJWT(payload: #"{"exp":1800000000.5}"#)))
        XCTAssertEqual(claims.exp, 1_800_000_000.5)
    }

    func testBase64URLAlphabetDecodes() throws {
        // "~~~" encodes with '-' and "???" with '_' in base64url ('+' and '/' in base64).
        let payload = #"{"exp":7,"x":"~~~","y":"???"}"#
        let token = makeJWT(payload: payload)
        let encodedPayload = token.split(separator: ".")[1]
        XCTAssertTrue(encodedPayload.contains("-") && encodedPayload.contains("_"))
        XCTAssertEqual(Base64URL.decode(Array(encodedPayload.utf8)), Array(payload.utf8))
        XCTAssertEqual(JWTClaims.decode(token)?.exp, 7)
    }

    func testBase64URLDecodesEveryLength() {
        let bytes: [UInt8] = Array(0...255)
        for length in 0...bytes.count where length > 0 {
            let encoded = base64URL(Array(bytes.prefix(length)))
            XCTAssertEqual(Base64URL.decode(Array(encoded.utf8)), Array(bytes.prefix(length)), "length \(length)")
        }
    }

    func testOpaqueTokensAreNotJWTs() {
        for opaque in ["ya29.a0AfH6SMBopaque", "abc", "a.b.c.d", "..", "", "a.b."] {
            XCTAssertNil(JWTClaims.decode(opaque), opaque)
        }
    }

    func testStandardBase64CharactersAreRejected() {
        let token = makeJWT(payload: #"{"exp":7,"x":"~~~"}"#)
        let standard = token.replacingOccurrences(of: "-", with: "+")
        XCTAssertNotEqual(standard, token)
        XCTAssertNil(JWTClaims.decode(standard))
    }

    func testSignatureOutsideTheBase64URLAlphabetIsNotAJWT() {
        let parts = makeJWT(payload: #"{"exp":1}"#).split(separator: ".").map(String.init)
        XCTAssertNotNil(JWTClaims.decode([parts[0], parts[1], "c2ln"].joined(separator: ".")))
        XCTAssertNil(JWTClaims.decode([parts[0], parts[1], "c2l+"].joined(separator: ".")))
        XCTAssertNil(JWTClaims.decode([parts[0], parts[1], "sig sig"].joined(separator: ".")))
    }

    func testPayloadThatIsNotAJSONObjectIsNotAJWT() {
        XCTAssertNil(JWTClaims.decode(makeJWT(payload: "[1,2]")))
        XCTAssertNil(JWTClaims.decode(makeJWT(payload: "not json")))
        XCTAssertNil(JWTClaims.decode(makeJWT(payload: #"{"exp":1}"#, header: "[]")))
    }

    func testImpossibleBase64LengthIsRejected() {
        let parts = makeJWT(payload: #"{"exp":1}"#).split(separator: ".").map(String.init)
        // One character more than a multiple of four cannot be base64.
        let padded = parts[1] + String(repeating: "A", count: (4 - parts[1].count % 4) % 4 + 1)
        XCTAssertEqual(padded.count % 4, 1)
        XCTAssertNil(JWTClaims.decode([parts[0], padded, parts[2]].joined(separator: ".")))
    }

    func testJSONBooleansAreNotNumbers() throws {
        let parsed = JSONish.parse(Array(#"[true,1,0,false,null,"s"]"#.utf8))
        XCTAssertEqual(parsed, .array([.bool(true), .number(1), .number(0), .bool(false), .null, .string("s")]))
    }

    func testJSONTextRoundTripsWithSortedKeysAndWholeNumbersAsIntegers() throws {
        let text = #"{"b":[1,2.5,"x/y"],"a":{"t":true,"n":null},"e":1795453745}"#
        let parsed = try XCTUnwrap(JSONish.parse(Array(text.utf8)))
        XCTAssertEqual(parsed.jsonText, #"{"a":{"n":null,"t":true},"b":[1,2.5,"x/y"],"e":1795453745}"#)
        XCTAssertEqual(JSONish.parse(Array(parsed.jsonText.utf8)), parsed)
    }

    func testNotJSONIsNil() {
        // More refusals, one per rule of the grammar, are in JSONReaderTests.
        for text in ["", "{", "<html>", #"{"a":}"#, "[1 2]", "tru", #"{"a" 1}"#, #""\u12""#] {
            XCTAssertNil(JSONish.parse(Array(text.utf8)), text)
        }
    }
}
