@testable import FleetTokenProxy
import Foundation
import XCTest

/// Which directories the system trust store looks CAs up in by subject hash, and when it falls
/// back to the bundle file (the lookups themselves: IntegrationTests' TLSUpstreamTests).
final class TrustStoreTests: XCTestCase {
    func testHashedNamesAreCertificatesOnly() {
        for name in ["5ed36f99.0", "002c0b4f.1", "ffffffff.12"] {
            XCTAssertTrue(TrustStore.isHashedCertificateName(name), name)
        }
        // A CRL, a bundle, a CA under its own name, upper-case hex, no sequence number.
        for name in ["5ed36f99.r0", "ca-certificates.crt", "ISRG_Root_X1.pem", "5ED36F99.0", "5ed36f99.", "5ed36f9.0", "5ed36f99.0a"] {
            XCTAssertFalse(TrustStore.isHashedCertificateName(name), name)
        }
    }

    func testADirectoryIsHashedWhenOneEntryIsACertificateHash() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ftp-trust-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try Data().write(to: dir.appendingPathComponent("ca-certificates.crt"))
        XCTAssertFalse(TrustStore.holdsHashedCertificate(directory: dir.path))
        try Data().write(to: dir.appendingPathComponent("5ed36f99.0"))
        XCTAssertTrue(TrustStore.holdsHashedCertificate(directory: dir.path))
        XCTAssertFalse(TrustStore.holdsHashedCertificate(directory: dir.appendingPathComponent("absent").path))
    }
}
