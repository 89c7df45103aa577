@testable import FleetTokenProxy
@testable import FleetTokenProxyStandIns
import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `external_account` ADC files, workload identity federation (docs/CONTRACT.md §4a), in each
/// signer mode: an OIDC subject token from a file or a URL, exchanged at the stand-in STS
/// (which verifies it against its identity provider's key), used as it is or to impersonate
/// the stand-in account. No key anywhere on the sidecar's side.
final class ExternalAccountTests: GoogleCredentialsTestCase {
    func assertNoSubjectTokenIn(_ text: String, file: StaticString = #filePath, line: UInt = #line) {
        let token = (try? String(contentsOfFile: tokenFile, encoding: .utf8)) ?? "missing"
        XCTAssertFalse(text.contains(token) || text.contains("eyJ"), "no subject token in \(text)", file: file, line: line)
    }

    func testWithAdcFleetEngineGetsTheFederatedTokenFromAFileSourcedOIDCToken() throws {
        let sidecar = try sidecar(["--signer", "adc"], environment: try externalAccountEnvironment())
        defer { sidecar.stop() }
        try assertOneExchangeServesEveryEntity(sidecar)
        let form = standIns.sync { self.google.lastSTSForm }
        XCTAssertEqual(form["subject_token_type"], "urn:ietf:params:oauth:token-type:jwt")
        XCTAssertEqual(form["scope"], "https://www.googleapis.com/auth/cloud-platform")
        XCTAssertNil(form["options"], "a workload pool has no user project")
        XCTAssertEqual(standIns.sync { self.google.tokenQuotaProjects }, [], "no quota project on the exchange itself")
        XCTAssertTrue(sidecar.log.contains("workload identity pool"), sidecar.log)
        assertNoSubjectTokenIn(sidecar.log)
        assertNoTokenIn(sidecar.log)
    }

    func testWithIAMSignJwtIsAuthorisedByTheImpersonatedAccountsTokenWithItsLifetime() throws {
        let sidecar = try sidecar(["--signer", "iam:\(account)", "--iam-endpoint", "http://\(standIns.googleAddress)"],
                                  environment: try externalAccountEnvironment(impersonate: true))
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/deliveryVehicles/d1").status, 200, sidecar.log)
        XCTAssertEqual(stsRequests, 1)
        XCTAssertEqual(standIns.sync { self.google.generateAccessTokenRequests }, 1)
        XCTAssertEqual(standIns.sync { self.google.lastLifetime }, "1800s", "token_lifetime_seconds")
        let bearer = try XCTUnwrap(standIns.sync { self.google.lastSignJwtBearer })
        XCTAssertTrue(standIns.sync { self.google.impersonatedTokens.contains(bearer) }, "signJwt was authorised by the impersonated token")
        XCTAssertEqual(standIns.sync { self.google.quotaProjects }, ["billed", "billed"], "generateAccessToken and signJwt")
        XCTAssertEqual(fleetEngineStatistics.rejected, 0)
        assertNoSubjectTokenIn(sidecar.log)
    }

    func testWithIAMAndNoImpersonationTheFederatedTokenItselfAuthorisesSignJwt() throws {
        let sidecar = try sidecar(["--signer", "iam:\(account)", "--iam-endpoint", "http://\(standIns.googleAddress)"],
                                  environment: try externalAccountEnvironment())
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/tasks/k1").status, 200, sidecar.log)
        let bearer = try XCTUnwrap(standIns.sync { self.google.lastSignJwtBearer })
        XCTAssertTrue(standIns.sync { self.google.federatedTokens.contains(bearer) }, "signJwt was authorised by STS's token")
        XCTAssertEqual(standIns.sync { self.google.generateAccessTokenRequests }, 0)
        XCTAssertEqual(standIns.sync { self.google.quotaProjects }, ["billed"], "the file's quota project on signJwt")
    }

    func testTheProvidersIDTokenComesFromGenerateIdTokenThroughImpersonation() throws {
        let audience = "https://token-provider-abc123-uc.a.run.app"
        let google = google
        standIns.sync { self.standIns.provider.bearerCheck = { google.isIDToken($0, for: audience) } }
        let sidecar = try sidecar(["--provider-id-token-audience", audience], environment: try externalAccountEnvironment(impersonate: true),
                                  provider: true)
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 200, sidecar.log)
        XCTAssertEqual(standIns.sync { self.google.generateIdTokenRequests }, 1)
        XCTAssertEqual(stsRequests, 1)
    }

    func testAnIDTokenWithoutImpersonationStopsStartUp() throws {
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("FLEET_TOKEN_PROXY_") }
        env.merge(try externalAccountEnvironment()) { $1 }
        env["HOME"] = directory
        let result = try runCommand(SidecarProcess.binary.path, [
            "serve", "--listen", "127.0.0.1:0", "--upstream", "http://\(standIns.fleetEngineAddress)",
            "--provider-url", standIns.providerTemplate, "--provider-id-token-audience", "https://aud.example",
        ], environment: env)
        XCTAssertEqual(result.status, 2, result.stderr)
        XCTAssertTrue(result.stderr.contains("has no service_account_impersonation_url"), result.stderr)
    }

    func testAURLSourcedTokenIsReadFromJSONWithTheFilesHeaders() throws {
        let source = JSONish.object([
            "url": .string("http://\(standIns.googleAddress)/oidc/token"), "headers": .object(["Metadata": .string("True")]),
            "format": .object(["type": .string("json"), "subject_token_field_name": .string("access_token")]),
        ])
        let sidecar = try sidecar(["--signer", "adc"], environment: try externalAccountEnvironment(source: source))
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 200, sidecar.log)
        XCTAssertEqual(standIns.sync { self.google.subjectTokenURLRequests }, 1)
        XCTAssertEqual(stsRequests, 1)
    }

    func testAWorkforcePoolSendsItsUserProjectInOptions() throws {
        let workforce = "//iam.googleapis.com/locations/global/workforcePools/pool/providers/oidc"
        standIns.sync { self.google.poolAudience = workforce }
        let sidecar = try sidecar(["--signer", "adc"], environment: try externalAccountEnvironment(extra: ["workforce_pool_user_project": .string("123")]))
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 200, sidecar.log)
        XCTAssertEqual(standIns.sync { self.google.lastSTSForm["options"] }, #"{"userProject":"123"}"#)
        XCTAssertTrue(sidecar.log.contains("workforce identity pool"), sidecar.log)
    }

    // MARK: Errors in the client's terms (docs/CONTRACT.md §5), and the file read afresh

    func testTheFileIsReadAgainAtTheNextExchangeAndSTSRefusalsArePermissionDeniedWithTheirOwnText() throws {
        let sidecar = try sidecar(["--signer", "adc", "--provider-backoff-max", "0.2"], environment: try externalAccountEnvironment())
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 200, sidecar.log)
        // The identity provider's token is replaced by one STS cannot verify; the next exchange reads it.
        let foreign = try RSAKeyPair.generate()
        writeSubjectToken(standIns.sync { self.google.subjectToken(signedBy: foreign) })
        standIns.sync { self.standIns.fleetEngine.unauthenticatedCalls = 1 }
        let refused = try call(sidecar, "/v1/providers/p/vehicles/v1")
        XCTAssertEqual(refused.status, 403, refused.body)
        XCTAssertTrue(refused.body.contains("PERMISSION_DENIED") && refused.body.contains("STS refused with HTTP 400: invalid_grant: The given subject token could not be verified."),
                      refused.body)
        XCTAssertEqual(stsRequests, 2, "Fleet Engine's 401 dropped the federated token; the file was read again")
        assertNoSubjectTokenIn(refused.body + sidecar.log)
        writeSubjectToken(standIns.sync { self.google.subjectToken() })
        usleep(300_000)
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 200, "the rotated token is used" + sidecar.log)
        XCTAssertEqual(stsRequests, 3)
    }

    func testAnUnreachableSTSOrAMissingFileIsUnavailable() throws {
        let port = try freePort()
        let sidecar = try sidecar(["--signer", "adc", "--provider-backoff-max", "0.2"],
                                  environment: try externalAccountEnvironment(tokenURL: "http://127.0.0.1:\(port)/v1/token"))
        defer { sidecar.stop() }
        let down = try call(sidecar, "/v1/providers/p/vehicles/v1")
        XCTAssertEqual(down.status, 503, down.body)
        XCTAssertTrue(down.body.contains("STS unreachable"), down.body)
        try FileManager.default.removeItem(atPath: tokenFile)
        usleep(300_000)
        let missing = try call(sidecar, "/v1/providers/p/vehicles/v2")
        XCTAssertEqual(missing.status, 503, missing.body)
        XCTAssertTrue(missing.body.contains("the subject token file \(tokenFile) cannot be read"), missing.body)
    }

    func testSTSFailingIsUnavailableAndAnUnusableAnswerIsBadGateway() throws {
        standIns.sync { self.google.stsFailure = .status(503) }
        let sidecar = try sidecar(["--signer", "adc", "--provider-backoff-max", "0.2"], environment: try externalAccountEnvironment())
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 503)
        usleep(300_000)
        standIns.sync { self.google.stsFailure = .garbage }
        let garbage = try call(sidecar, "/v1/providers/p/vehicles/v2")
        XCTAssertEqual(garbage.status, 502, garbage.body)
        XCTAssertTrue(garbage.body.contains(#"STS answer has no \"access_token\""#), garbage.body)
    }
}
