import XCTest
@testable import FleetTokenProxy

/// Where Application Default Credentials are found, in Google's order (docs/CONTRACT.md §4a).
final class ApplicationDefaultCredentialsTests: XCTestCase {
    let user = #"{"type":"authorized_user","client_id":"c.apps.googleusercontent.com","client_secret":"s3cret","refresh_token":"1//r3fresh","quota_project_id":"q"}"#

    func find(_ environment: [String: String], files: [String: String], metadataServerAnswers: Bool = false) throws -> ApplicationDefaultCredentials {
        try ApplicationDefaultCredentials.find(environment: environment, readFile: { files[$0].map { Array($0.utf8) } },
                                               probeMetadataServer: { metadataServerAnswers })
    }

    func testTheEnvironmentFileComesFirstThenGcloudsThenTheMetadataServer() throws {
        let files = ["/adc.json": user, "/home/u/.config/gcloud/application_default_credentials.json": user]
        XCTAssertEqual(try find(["GOOGLE_APPLICATION_CREDENTIALS": "/adc.json", "HOME": "/home/u"], files: files).origin, "/adc.json (authorized user)")
        XCTAssertEqual(try find(["HOME": "/home/u", "GCE_METADATA_HOST": "127.0.0.1:1"], files: files).origin,
                       "/home/u/.config/gcloud/application_default_credentials.json (authorized user)")
        XCTAssertEqual(try find(["HOME": "/nobody", "GCE_METADATA_HOST": "127.0.0.1:1"], files: files), .metadataServer(host: "127.0.0.1:1"))
        XCTAssertEqual(try find(["HOME": "/nobody"], files: ["/sys/class/dmi/id/product_name": "Google Compute Engine\n"]),
                       .metadataServer(host: "metadata.google.internal"))
        XCTAssertEqual(try find(["HOME": "/nobody"], files: [:], metadataServerAnswers: true), .metadataServer(host: "169.254.169.254"),
                       "last, a metadata server that answers as Google's")
    }

    func testNoCredentialsAnywhereNamesEveryPlaceLookedIn() {
        XCTAssertThrowsError(try find(["HOME": "/home/u"], files: [:])) { error in
            let message = (error as? ConfigError)?.message ?? ""
            XCTAssertTrue(message.contains("GOOGLE_APPLICATION_CREDENTIALS is not set"), message)
            XCTAssertTrue(message.contains("/home/u/.config/gcloud/application_default_credentials.json"), message)
            XCTAssertTrue(message.contains("GCE_METADATA_HOST"), message)
            XCTAssertTrue(message.contains("no metadata server answered at 169.254.169.254"), message)
        }
        XCTAssertThrowsError(try find(["GOOGLE_APPLICATION_CREDENTIALS": "/missing.json"], files: [:])) { error in
            XCTAssertTrue("\(error)".contains("/missing.json"))
        }
    }

    func testAnAuthorizedUserKeepsItsQuotaProjectAndNeverShowsItsSecrets() throws {
        guard case .authorizedUser(let credentials, _) = try ApplicationDefaultCredentials.parse(Array(user.utf8), file: "f") else {
            return XCTFail("an authorized user")
        }
        XCTAssertEqual(credentials.quotaProjectID, "q")
        XCTAssertEqual(credentials.refreshToken, "1//r3fresh")
        XCTAssertFalse("\(credentials)".contains("s3cret") || "\(credentials)".contains("r3fresh"))
    }

    func testOtherTypesAndBadFieldsAreRefusedWithoutValues() {
        for text in [#"{"type":"external_account"}"#, #"{"type":"authorized_user","client_id":"c","client_secret":"s3cret"}"#, "[]"] {
            XCTAssertThrowsError(try ApplicationDefaultCredentials.parse(Array(text.utf8), file: "f")) { error in
                XCTAssertFalse("\(error)".contains("s3cret"))
            }
        }
    }
}
