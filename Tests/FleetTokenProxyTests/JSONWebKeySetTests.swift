@testable import FleetTokenProxy
@testable import FleetTokenProxyStandIns
import Foundation
import XCTest

/// The stand-in Fleet Engine's `--jwks`: a service account's keys as Google publishes them, in a
/// file named after the account (trusted for it alone) or under another name (any account).
final class JSONWebKeySetTests: XCTestCase {
    func testAKeyReadBackFromItsJWKSVerifiesTheAccountsTokensOnly() throws {
        let account = try StandInServiceAccount(project: "p")
        let directory = NSTemporaryDirectory() + "ftp-jwks-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try account.jwksText().write(toFile: "\(directory)/\(account.email).json", atomically: true, encoding: .utf8)

        let trusted = try JSONWebKeySet.trustedKeys(at: directory)
        XCTAssertEqual(trusted.map(\.keyID), [account.keyPair.keyID])
        XCTAssertEqual(trusted.map(\.account), [account.email])
        let check = FleetEngineTokenCheck(trustedKeys: trusted)

        let vehicle = EntityKey(provider: "p", type: .vehicle, id: "v1")
        let now = 1_800_000_000.0
        let credential = try SigningCredential(ServiceAccountKey(
            clientEmail: account.email, privateKeyID: account.keyPair.keyID, privateKeyPEM: try account.keyPair.privateKeyPEM()))
        XCTAssertEqual(check.check(token: try credential.mint(for: vehicle, wallNow: now, lifetime: 3600).get().token, entity: vehicle, now: now), .ok)

        let impostor = try SigningCredential(ServiceAccountKey(
            clientEmail: "other@p.iam.gserviceaccount.com", privateKeyID: account.keyPair.keyID,
            privateKeyPEM: try account.keyPair.privateKeyPEM()))
        XCTAssertEqual(check.check(token: try impostor.mint(for: vehicle, wallNow: now, lifetime: 3600).get().token, entity: vehicle, now: now).reason,
                       .unknownKeyID, "the key is the account's, not another's")

        let anyAccount = try JSONWebKeySet.trustedKeys(Array(try account.jwksText().utf8), account: nil)
        XCTAssertEqual(anyAccount.map(\.account), [nil])
        XCTAssertThrowsError(try JSONWebKeySet.trustedKeys(Array(#"{"keys":[{"kty":"RSA","kid":"k"}]}"#.utf8), account: nil))
        XCTAssertEqual(try JSONWebKeySet.trustedKeys(Array(#"{"keys":[{"kty":"EC","kid":"k"}]}"#.utf8), account: nil).count, 0)
    }
}
