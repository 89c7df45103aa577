@testable import FleetTokenProxy
import Logging
@testable import ParserInvariants
import XCTest

/// `external_account` files (docs/CONTRACT.md §4a): what is taken from them, what is refused
/// by name without a value, the subject token read from its source's bytes, and the STS form.
final class ExternalAccountCredentialsTests: XCTestCase {
    let pool = "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/pool/providers/oidc"
    let impersonationURL = "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/sa@p.iam.gserviceaccount.com:generateAccessToken"

    func file(_ extra: [String: JSONish] = [:], source: JSONish = .object(["file": .string("/run/token")])) -> [UInt8] {
        var members: [String: JSONish] = [
            "type": .string("external_account"), "audience": .string(pool), "subject_token_type": .string("urn:ietf:params:oauth:token-type:jwt"),
            "token_url": .string("https://sts.googleapis.com/v1/token"), "credential_source": source,
        ]
        members.merge(extra) { $1 }
        return Array(JSONish.object(members).jsonText.utf8)
    }

    func account(_ bytes: [UInt8]) throws -> ExternalAccountCredentials {
        guard case .externalAccount(let account) = try ApplicationDefaultCredentials.parse(bytes, file: "f").source else {
            throw ConfigError("not an external account")
        }
        return account
    }

    func testAFileSourcedPoolIsTakenAsCreateCredConfigWritesIt() throws {
        let account = try account(file())
        XCTAssertEqual(account.audience, pool)
        XCTAssertEqual(account.subjectTokenSource, .file(path: "/run/token", format: .text))
        XCTAssertNil(account.targetPrincipal)
        XCTAssertEqual(account.tokenLifetime, 3600)
        XCTAssertFalse(account.isWorkforcePool)
        XCTAssertEqual(try ApplicationDefaultCredentials.parse(file(), file: "f").origin, "f (workload identity pool \(pool) from subject token file /run/token)")
    }

    func testAURLSourceKeepsItsHeadersAndJSONFieldAndImpersonationItsLifetime() throws {
        let source = JSONish.object([
            "url": .string("http://169.254.169.254/metadata/identity/oauth2/token?api-version=2018-02-01"),
            "headers": .object(["Metadata": .string("True")]),
            "format": .object(["type": .string("json"), "subject_token_field_name": .string("access_token")]),
        ])
        let account = try account(file(["service_account_impersonation_url": .string(impersonationURL),
                                        "service_account_impersonation": .object(["token_lifetime_seconds": .number(1800)])], source: source))
        XCTAssertEqual(account.subjectTokenSource, .url("http://169.254.169.254/metadata/identity/oauth2/token?api-version=2018-02-01",
                                                        headers: [HeaderField(name: "Metadata", value: "True")], format: .json(field: "access_token")))
        XCTAssertEqual(account.targetPrincipal, "sa@p.iam.gserviceaccount.com")
        XCTAssertEqual(account.tokenLifetime, 1800)
        XCTAssertFalse(account.description.contains("True"), "a header's value is not shown: \(account)")
    }

    func testWhatGooglesLibrariesRefuseIsRefusedByName() {
        let cases: [([UInt8], String)] = [
            (file(["workforce_pool_user_project": .string("123")]), "workforce_pool_user_project"),
            (file(source: .object(["file": .string("/t"), "url": .string("http://x/")])), "exactly one"),
            (file(source: .object(["environment_id": .string("aws1")])), "regional_cred_verification_url"),
            (file(source: .object(["certificate": .object([:])])), "use_default_certificate_config true (exactly one)"),
            (file(source: .object(["certificate": .object(["use_default_certificate_config": .bool(true)]), "file": .string("/t")])),
             "credential_source.certificate (an object, alone)"),
            (file(source: .object(["url": .string("http://x/"), "headers": .object(["Metadata": .string("s3cret\r\nX-Injected: 1")])])), "credential_source.headers"),
            (file(source: .object(["file": .string("/t"), "format": .object(["type": .string("json")])])), "subject_token_field_name"),
            (file(["service_account_impersonation": .object(["token_lifetime_seconds": .number(60)])]), "token_lifetime_seconds"),
            (file(["service_account_impersonation_url": .string("https://iam/v1/x:signJwt")]), "service_account_impersonation_url"),
            (file(["client_id": .string("c")]), "client_secret"),
            (file(["token_url": .null]), "token_url"),
        ]
        for (bytes, named) in cases {
            XCTAssertThrowsError(try ApplicationDefaultCredentials.parse(bytes, file: "f"), named) { error in
                XCTAssertTrue("\(error)".contains(named), "\(error)")
                XCTAssertFalse("\(error)".contains("s3cret"), "\(error)")
            }
        }
    }

    func testAWorkforcePoolTakesItsUserProject() throws {
        let workforce = "//iam.googleapis.com/locations/global/workforcePools/pool/providers/oidc"
        let account = try account(file(["audience": .string(workforce), "workforce_pool_user_project": .string("123")]))
        XCTAssertTrue(account.isWorkforcePool)
        XCTAssertEqual(account.workforcePoolUserProject, "123")
    }

    // MARK: The subject token

    func testASubjectTokenIsTheTextLessItsLineEndOrTheJSONMember() {
        XCTAssertEqual(try SubjectTokenContent.parse(Array("eyJ.a.b\r\n".utf8), format: .text, from: "f").get(), "eyJ.a.b")
        XCTAssertEqual(try SubjectTokenContent.parse(Array(#"{"id_token":"eyJ.a.b"}"#.utf8), format: .json(field: "id_token"), from: "f").get(), "eyJ.a.b")
        let secret = "eyJhbGciOiJSUzI1NiJ9.secret-subject"
        for (bytes, format) in [(secret + " and more", SubjectTokenFormat.text), (#"{"token":"\#(secret)"}"#, .json(field: "id_token")),
                                ("", .text), (#"{"id_token":"\#(secret) x"}"#, .json(field: "id_token"))] {
            guard case .failure(let failure) = SubjectTokenContent.parse(Array(bytes.utf8), format: format, from: "the subject token file /t") else {
                return XCTFail("accepted \(bytes)")
            }
            XCTAssertEqual(failure.httpStatus, 502)
            XCTAssertTrue(failure.message.contains("the subject token file /t"), failure.message)
            XCTAssertFalse(failure.message.contains("secret-subject"), failure.message)
        }
    }

    func testTheSubjectTokenInvariantCatchesARefusalThatRepeatsTheToken() {
        let bytes = Array("eyJhbGciOiJSUzI1NiJ9.subject".utf8)
        XCTAssertNoThrow(try SubjectTokenInvariant.checkRefusal(.providerAnswerUnusable("the file is unusable"), of: bytes))
        XCTAssertThrowsError(try SubjectTokenInvariant.checkRefusal(.providerAnswerUnusable("bad token eyJhbGciOiJSUzI1NiJ9.subject"), of: bytes))
        XCTAssertThrowsError(try SubjectTokenInvariant.checkText(Array("abc\n".utf8), .success("ab")), "a token that is not the bytes")
        XCTAssertThrowsError(try SubjectTokenInvariant.checkJSON(Array(#"{"id_token":"a"}"#.utf8), .success("b")))
    }

    func testTheFileInvariantCatchesADescriptionThatShowsASecret() throws {
        var account = try account(file(["client_id": .string("c"), "client_secret": .string("s3cret")]))
        XCTAssertNoThrow(try ADCFileInvariant.checkDescription(account))
        XCTAssertThrowsError(try ADCFileInvariant.checkDescription(account) { "\($0) \($0.clientSecret ?? "")" })
        account.subjectTokenSource = .url("http://x/", headers: [HeaderField(name: "Authorization", value: "Bearer idp")], format: .text)
        XCTAssertThrowsError(try ADCFileInvariant.checkDescription(account) { account in
            guard case .url(_, let headers, _) = account.subjectTokenSource else { return "\(account)" }
            return "\(account) \(headers.map(\.value))"
        }, "a header's value")
        XCTAssertFalse("\(account.subjectTokenSource)".contains("Bearer idp"), "interpolated, the source shows no header value")
    }

    // MARK: The STS request

    func exchange(_ bytes: [UInt8]) throws -> STSExchange {
        let context = TokenExchangeContext(loop: try EventLoop(), tls: nil, timeout: 1, backoff: BackoffPolicy(), minValidity: 60,
                                           clock: ManualClock(), logger: Logger(label: "test"), random: { 0 })
        return try STSExchange(account: try account(bytes), file: "f", context: context)
    }

    func testTheSTSFormIsRFC8693sWithAWorkforceUserProjectUnlessAClientAuthenticates() throws {
        let plain = Dictionary(uniqueKeysWithValues: try exchange(file()).form(subjectToken: "subject"))
        XCTAssertEqual(plain, [
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "audience": pool,
            "scope": "https://www.googleapis.com/auth/cloud-platform", "requested_token_type": "urn:ietf:params:oauth:token-type:access_token",
            "subject_token": "subject", "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
        ])
        let workforce = ["audience": JSONish.string("//iam.googleapis.com/locations/global/workforcePools/w/providers/p"),
                         "workforce_pool_user_project": .string("123")]
        let withProject = Dictionary(uniqueKeysWithValues: try exchange(file(workforce)).form(subjectToken: "s"))
        XCTAssertEqual(withProject["options"], #"{"userProject":"123"}"#)
        var clientFile = workforce
        clientFile["client_id"] = .string("client")
        clientFile["client_secret"] = .string("secret")
        let client = try exchange(file(clientFile))
        XCTAssertNil(Dictionary(uniqueKeysWithValues: client.form(subjectToken: "s"))["options"])
        XCTAssertEqual(client.headers.first { $0.name == "Authorization" }?.value, "Basic Y2xpZW50OnNlY3JldA==")
        XCTAssertNil(try exchange(file()).headers.first { $0.name == "Authorization" })
    }
}
