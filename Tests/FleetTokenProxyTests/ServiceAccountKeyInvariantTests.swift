@testable import FleetTokenProxy
@testable import ParserInvariants
import XCTest

/// The service-account-key fuzz target's invariant can fail: each of these breaks it on purpose.
final class ServiceAccountKeyInvariantTests: XCTestCase {
    let pem = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
    var file: [String: JSONish] {
        ["client_email": .string("a@p.iam.gserviceaccount.com"), "private_key_id": .string("k1"), "private_key": .string(pem)]
    }

    func testTheFilesOwnFieldsPass() throws {
        try ServiceAccountKeyInvariant.checkAccepted(
            ServiceAccountKey(clientEmail: "a@p.iam.gserviceaccount.com", privateKeyID: "k1", privateKeyPEM: pem), file: file)
    }

    func testAFieldThatIsNotTheFilesOrNotVisibleASCIIBreaksIt() {
        let wrong = [
            ServiceAccountKey(clientEmail: "b@p.iam.gserviceaccount.com", privateKeyID: "k1", privateKeyPEM: pem),
            ServiceAccountKey(clientEmail: "a@p.iam.gserviceaccount.com", privateKeyID: "k1", privateKeyPEM: pem, tokenURI: "https://x"),
        ]
        for key in wrong {
            XCTAssertThrowsError(try ServiceAccountKeyInvariant.checkAccepted(key, file: file), "\(key)")
        }
        var spaced = file
        spaced["private_key_id"] = .string("k 1")
        XCTAssertThrowsError(try ServiceAccountKeyInvariant.checkAccepted(
            ServiceAccountKey(clientEmail: "a@p.iam.gserviceaccount.com", privateKeyID: "k 1", privateKeyPEM: pem), file: spaced))
    }
}
