import XCTest
@testable import FleetTokenProxy

/// Where Application Default Credentials are found, in Google's order, and which quota project
/// goes with them (docs/CONTRACT.md §4a).
final class ApplicationDefaultCredentialsTests: XCTestCase {
    let user = #"{"type":"authorized_user","client_id":"c.apps.googleusercontent.com","client_secret":"s3cret","refresh_token":"1//r3fresh","quota_project_id":"q"}"#
    let target = "fleet-admin@p.iam.gserviceaccount.com"
    var impersonated: String {
        #"{"type":"impersonated_service_account","service_account_impersonation_url":"https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/\#(target):generateAccessToken","delegates":["projects/-/serviceAccounts/hop@p.iam.gserviceaccount.com"],"quota_project_id":"billed","source_credentials":{"type":"authorized_user","client_id":"c","client_secret":"s3cret","refresh_token":"1//r3fresh"}}"#
    }

    func find(_ environment: [String: String], files: [String: String], metadataServerAnswers: Bool = false) throws -> ApplicationDefaultCredentials {
        try ApplicationDefaultCredentials.find(environment: environment, readFile: { files[$0].map { Array($0.utf8) } },
                                               probeMetadataServer: { metadataServerAnswers })
    }

    func parse(_ text: String) throws -> ApplicationDefaultCredentials {
        try ApplicationDefaultCredentials.parse(Array(text.utf8), file: "f")
    }

    func testTheEnvironmentFileComesFirstThenGcloudsThenTheMetadataServer() throws {
        let files = ["/adc.json": user, "/home/u/.config/gcloud/application_default_credentials.json": user]
        XCTAssertEqual(try find(["GOOGLE_APPLICATION_CREDENTIALS": "/adc.json", "HOME": "/home/u"], files: files).origin,
                       "/adc.json (authorized user, quota project q)")
        XCTAssertEqual(try find(["HOME": "/home/u", "GCE_METADATA_HOST": "127.0.0.1:1"], files: files).origin,
                       "/home/u/.config/gcloud/application_default_credentials.json (authorized user, quota project q)")
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
        let credentials = try parse(user)
        guard case .authorizedUser(let user) = credentials.source else { return XCTFail("an authorized user") }
        XCTAssertEqual(credentials.quotaProject, "q")
        XCTAssertEqual(user.refreshToken, "1//r3fresh")
        XCTAssertFalse("\(user)".contains("s3cret") || "\(user)".contains("r3fresh"))
        XCTAssertFalse(credentials.origin.contains("s3cret") || credentials.origin.contains("r3fresh"))
    }

    // MARK: The quota project, as Google's libraries choose it

    func testGoogleCloudQuotaProjectWinsOverTheFilesOwnForEveryKindOfCredentials() throws {
        let files = ["/adc.json": user, "/imp.json": impersonated]
        XCTAssertEqual(try find(["GOOGLE_APPLICATION_CREDENTIALS": "/adc.json"], files: files).quotaProject, "q", "the file's own")
        XCTAssertEqual(try find(["GOOGLE_APPLICATION_CREDENTIALS": "/adc.json", "GOOGLE_CLOUD_QUOTA_PROJECT": "env-project"], files: files).quotaProject,
                       "env-project")
        XCTAssertEqual(try find(["GOOGLE_APPLICATION_CREDENTIALS": "/imp.json"], files: files).quotaProject, "billed")
        XCTAssertEqual(try find(["GOOGLE_APPLICATION_CREDENTIALS": "/imp.json", "GOOGLE_CLOUD_QUOTA_PROJECT": "env-project"], files: files).quotaProject,
                       "env-project")
        XCTAssertEqual(try find(["GCE_METADATA_HOST": "127.0.0.1:1", "HOME": "/nobody"], files: [:]).quotaProject, nil)
        XCTAssertEqual(try find(["GCE_METADATA_HOST": "127.0.0.1:1", "HOME": "/nobody", "GOOGLE_CLOUD_QUOTA_PROJECT": "env-project"], files: [:]),
                       .metadataServer(host: "127.0.0.1:1", quotaProject: "env-project"))
        XCTAssertEqual(try find(["GOOGLE_APPLICATION_CREDENTIALS": "/adc.json", "GOOGLE_CLOUD_QUOTA_PROJECT": ""], files: files).quotaProject, "q",
                       "an empty variable is not set")
    }

    func testAServiceAccountKeysQuotaProjectIsKeptAndABadOneRefused() throws {
        let pem = "-----BEGIN PRIVATE KEY-----\\nMIIB\\n-----END PRIVATE KEY-----\\n"
        let key = #"{"type":"service_account","client_email":"a@p.iam.gserviceaccount.com","private_key_id":"k","private_key":"\#(pem)","quota_project_id":"kq"}"#
        XCTAssertEqual(try parse(key).quotaProject, "kq")
        XCTAssertThrowsError(try parse(user.replacingOccurrences(of: #""q""#, with: #""q\nX-Injected: 1""#))) { error in
            XCTAssertTrue("\(error)".contains("quota_project_id"), "\(error)")
        }
        XCTAssertThrowsError(try find(["GOOGLE_APPLICATION_CREDENTIALS": "/adc.json", "GOOGLE_CLOUD_QUOTA_PROJECT": "a b"], files: ["/adc.json": user])) { error in
            XCTAssertTrue("\(error)".contains("GOOGLE_CLOUD_QUOTA_PROJECT"), "\(error)")
        }
    }

    // MARK: impersonated_service_account

    func testAnImpersonationNamesItsTargetSourceAndDelegates() throws {
        let credentials = try parse(impersonated)
        guard case .impersonatedServiceAccount(let impersonation) = credentials.source else { return XCTFail("an impersonation") }
        XCTAssertEqual(impersonation.targetPrincipal, target)
        XCTAssertEqual(impersonation.delegates, ["projects/-/serviceAccounts/hop@p.iam.gserviceaccount.com"])
        XCTAssertEqual(impersonation.source, .authorizedUser(AuthorizedUserCredentials(clientID: "c", clientSecret: "s3cret", refreshToken: "1//r3fresh")))
        XCTAssertEqual(credentials.origin, "f (\(target) impersonated by authorized user of client c through 1 delegates, quota project billed)")
        XCTAssertFalse(credentials.origin.contains("s3cret") || credentials.origin.contains("r3fresh"))
    }

    func testAnImpersonationWithABadURLOrSourceIsRefusedByNameWithoutValues() {
        let cases: [(String, String)] = [
            (impersonated.replacingOccurrences(of: ":generateAccessToken", with: ":signJwt"), "service_account_impersonation_url"),
            (impersonated.replacingOccurrences(of: "/\(target):", with: "/:"), "service_account_impersonation_url"),
            (impersonated.replacingOccurrences(of: #""type":"authorized_user""#, with: #""type":"external_account""#), "source_credentials"),
            (impersonated.replacingOccurrences(of: #""refresh_token":"1//r3fresh""#, with: #""refresh_token":7"#), "source_credentials.refresh_token"),
            (impersonated.replacingOccurrences(of: #""delegates":["#, with: #""delegates":[3,"#), "delegates"),
        ]
        for (text, named) in cases {
            XCTAssertThrowsError(try parse(text), named) { error in
                XCTAssertTrue("\(error)".contains(named), "\(error)")
                XCTAssertFalse("\(error)".contains("s3cret") || "\(error)".contains("r3fresh"), "\(error)")
            }
        }
    }

    func testOtherTypesAndBadFieldsAreRefusedWithoutValues() {
        for text in [#"{"type":"external_account_authorized_user"}"#, #"{"type":"authorized_user","client_id":"c","client_secret":"s3cret"}"#, "[]"] {
            XCTAssertThrowsError(try parse(text)) { error in
                XCTAssertFalse("\(error)".contains("s3cret"))
            }
        }
    }
}
