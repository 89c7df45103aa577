import XCTest
@testable import FleetTokenProxy

/// The service-account key file reader (docs/CONTRACT.md §4a): the three fields it needs, and
/// refusals that never quote a value of the file.
final class ServiceAccountKeyTests: XCTestCase {
    let pem = "-----BEGIN PRIVATE KEY-----\nMIIE-not-really\n-----END PRIVATE KEY-----\n"

    func parse(_ text: String) -> Result<ServiceAccountKey, ServiceAccountKeyError> {
        ServiceAccountKey.parse(Array(text.utf8))
    }

    func json(_ members: [String: JSONish]) -> String { JSONish.object(members).jsonText }

    var complete: [String: JSONish] {
        [
            "type": .string("service_account"), "project_id": .string("p"),
            "private_key_id": .string("0123abcd"), "private_key": .string(pem),
            "client_email": .string("signer@p.iam.gserviceaccount.com"), "client_id": .string("1"),
            "token_uri": .string("https://oauth2.googleapis.com/token"),
        ]
    }

    func testAGoogleKeyFileIsRead() throws {
        let key = try parse(json(complete)).get()
        XCTAssertEqual(key.clientEmail, "signer@p.iam.gserviceaccount.com")
        XCTAssertEqual(key.privateKeyID, "0123abcd")
        XCTAssertEqual(key.privateKeyPEM, pem)
        XCTAssertEqual(key.tokenURI, "https://oauth2.googleapis.com/token")
        XCTAssertFalse("\(key)".contains("PRIVATE KEY"), "the description names the account and key id only")
        XCTAssertEqual("\(key)", "service account signer@p.iam.gserviceaccount.com key 0123abcd")
    }

    func testTypeAndTokenURIAreOptional() throws {
        var members = complete
        members["type"] = nil
        members["token_uri"] = nil
        XCTAssertNil(try parse(json(members)).get().tokenURI)
    }

    func testEachMissingOrWrongFieldIsNamedAndNoValueIsQuoted() {
        let cases: [(String, JSONish?, String)] = [
            ("type", .string("authorized_user"), "not a service account key"),
            ("client_email", nil, "client_email"),
            ("client_email", .string("no-at-sign"), "client_email"),
            ("client_email", .string("a b@p"), "client_email"),
            ("private_key_id", .number(7), "private_key_id"),
            ("private_key_id", .string(""), "private_key_id"),
            ("private_key", .string("-----BEGIN RSA PRIVATE KEY-----\nsecret-body\n"), "PKCS#8"),
            ("private_key", .string("-----BEGIN ENCRYPTED PRIVATE KEY-----\nsecret-body\n"), "PKCS#8"),
            ("private_key", nil, "private_key"),
            ("token_uri", .bool(true), "token_uri"),
        ]
        for (field, value, expected) in cases {
            var members = complete
            members[field] = value
            switch parse(json(members)) {
            case .success: XCTFail("\(field) = \(String(describing: value)) accepted")
            case .failure(let error):
                XCTAssertTrue(error.message.contains(expected), "\(field): \(error.message)")
                XCTAssertFalse(error.message.contains("secret-body") || error.message.contains("MIIE"), error.message)
            }
        }
    }

    func testNotJSONOrNotAnObjectIsRefused() {
        for text in ["", "[]", "\"key\"", "{", "{\"client_email\":\"a@b\",}", String(repeating: "[", count: 100)] {
            XCTAssertThrowsError(try parse(text).get(), text)
        }
    }
}
