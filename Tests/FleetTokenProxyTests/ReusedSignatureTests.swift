import XCTest
@testable import FleetTokenProxy
@testable import FleetTokenProxyStandIns

/// `stand-in provider --reuse-signature`: tokens of the real shape and length for the
/// benchmarks, minted without an RSA signature each, which must not verify.
final class ReusedSignatureTests: StandInTestCase {
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
