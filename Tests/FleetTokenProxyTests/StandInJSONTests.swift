import Foundation
import XCTest
@testable import FleetTokenProxy
@testable import FleetTokenProxyStandIns

/// `StandInJSON` must write what `JSONSerialization` writes (sorted keys, slashes unescaped),
/// byte for byte: the stand-ins' answers and tokens are the same as before it, only cheaper.
final class StandInJSONTests: StandInTestCase {
    private func foundation(_ object: [String: Any]) throws -> [UInt8] {
        Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
    }

    private func assertSameAsFoundation(_ object: [String: Any], file: StaticString = #filePath, line: UInt = #line) throws {
        let ours = StandInJSON.bytes(object)
        XCTAssertEqual(String(decoding: ours, as: UTF8.self), String(decoding: try foundation(object), as: UTF8.self), file: file, line: line)
    }

    func testTheShapesTheStandInsWriteAreFoundationsBytes() throws {
        try assertSameAsFoundation(["alg": "RS256", "typ": "JWT", "kid": "0123abcd"])
        try assertSameAsFoundation([
            "iss": "fleet-engine-stand-in@p.iam.gserviceaccount.com", "sub": "s", "aud": "https://fleetengine.googleapis.com/",
            "iat": 1_735_689_600, "exp": 1_735_693_200,
            "authorization": ["vehicleid": "v1", "taskids": ["t1", "t/2"]] as [String: Any],
        ])
        try assertSameAsFoundation(["token": "a.b.c", "expirationTimestamp": 1_735_693_200])
        try assertSameAsFoundation(["token": "a.b.c", "expires_at": "2025-01-01T01:00:00Z"])
        try assertSameAsFoundation(["expiresInSeconds": -5, "jwt": "", "error": "only GET"])
        try assertSameAsFoundation(["empty": [:] as [String: Any], "list": [] as [Any]])
    }

    func testKeysAreOrderedAsFoundationOrdersThemIgnoringCase() throws {
        try assertSameAsFoundation(["TOKEN_EXPIRATION": 1, "token": "x", "Token_B": "y", "access_token": "z", "expires_in": 2, "expiresIn": 3, "b": 4, "A": 5])
    }

    func testQuotesBackslashesSlashesAndNonASCIIAreWrittenAsFoundationWritesThem() throws {
        try assertSameAsFoundation(["id": "a\"b\\c/d é ✓ 🚗", "path": "/token/p/vehicle/x%2Fy"])
    }

    func testShapesOutsideTheDirectPathStillGetFoundationsBytes() throws {
        try assertSameAsFoundation(["control": "tab\there, newline\n, bell\u{7}"])
        try assertSameAsFoundation(["key9": "digits in a key", "key10": "sort numerically in Foundation"])
        try assertSameAsFoundation(["flag": true, "ratio": 0.5, "nothing": NSNull()])
    }

    func testReusedSignatureKeepsTheTokensLengthAndDoesNotVerify() throws {
        var minter = JWTMinter(keyPair: providerKey)
        let signed = try minter.mint(for: vehicle("v1"), issuedAt: epoch2025)
        minter.reusedSignature = try providerKey.sign(Array("anything".utf8))
        let first = try minter.mint(for: vehicle("v1"), issuedAt: epoch2025)
        let second = try minter.mint(for: vehicle("v2"), issuedAt: epoch2025)
        XCTAssertEqual(first.utf8.count, signed.utf8.count)
        XCTAssertEqual(first.split(separator: ".")[0...1], signed.split(separator: ".")[0...1], "header and claims unchanged")
        XCTAssertEqual(first.split(separator: ".")[2], second.split(separator: ".")[2], "one signature for every token")
        let parts = first.split(separator: ".")
        let signature = try XCTUnwrap(base64URLDecoded(parts[2]))
        XCTAssertFalse(providerKey.publicKey.verify(Array("\(parts[0]).\(parts[1])".utf8), signature: Array(signature)))
    }
}
