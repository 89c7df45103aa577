@testable import FleetTokenProxy
@testable import FleetTokenProxyStandIns
import Foundation
import XCTest

/// `impersonated_service_account` ADC files (docs/CONTRACT.md §4a) in each signer mode: the
/// source credentials' token authorises the stand-in IAM's `generateAccessToken` (for `adc` and
/// for `iam:`'s `signJwt`) and `generateIdToken` (for `--provider-id-token-audience`), with the
/// file's delegates and quota project.
final class ImpersonationTests: GoogleCredentialsTestCase {
    var generateAccessTokenRequests: Int { standIns.sync { self.google.generateAccessTokenRequests } }

    func testWithAdcFleetEngineGetsTheImpersonatedAccountsTokenBilledToTheQuotaProject() throws {
        let hop = "projects/-/serviceAccounts/hop@p.iam.gserviceaccount.com"
        let sidecar = try sidecar(["--signer", "adc", "--oauth-token-endpoint", google.tokenURI],
                                  environment: try impersonationEnvironment(delegates: [hop]))
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 200, sidecar.log)
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/trips/t1").status, 200, sidecar.log)
        XCTAssertEqual(generateAccessTokenRequests, 1, "one impersonated token for every entity")
        XCTAssertEqual(tokenRequests, 1, "one source token")
        let last = try XCTUnwrap(lastAuthorization).dropFirst("Bearer ".count)
        XCTAssertTrue(standIns.sync { self.google.impersonatedTokens.contains(String(last)) }, "Fleet Engine saw the impersonated token")
        XCTAssertEqual(standIns.sync { self.google.lastDelegates }, [hop])
        XCTAssertEqual(standIns.sync { self.google.lastLifetime }, "3600s")
        XCTAssertEqual(standIns.sync { self.google.quotaProjects }, ["billed"], "the quota project goes to IAM")
        XCTAssertTrue(sidecar.log.contains("\(account) impersonated by authorized user"), sidecar.log)
        XCTAssertFalse(sidecar.log.contains("s3cret") || sidecar.log.contains("r3fresh"), sidecar.log)
        assertNoTokenIn(sidecar.log)
    }

    func testGoogleCloudQuotaProjectWinsOverTheFilesOnIAMCalls() throws {
        var environment = try impersonationEnvironment()
        environment["GOOGLE_CLOUD_QUOTA_PROJECT"] = "from-env"
        let sidecar = try sidecar(["--signer", "adc", "--oauth-token-endpoint", google.tokenURI], environment: environment)
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 200, sidecar.log)
        XCTAssertEqual(standIns.sync { self.google.quotaProjects }, ["from-env"])
    }

    func testWithIAMSignJwtIsAuthorisedByTheImpersonatedTokenFromAKeySource() throws {
        let sidecar = try sidecar(["--signer", "iam:\(account)", "--iam-endpoint", "http://\(standIns.googleAddress)"],
                                  environment: try impersonationEnvironment(keySource: true))
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/tasks/k1").status, 200, sidecar.log)
        XCTAssertEqual(generateAccessTokenRequests, 1)
        XCTAssertEqual(standIns.sync { self.google.signJwtRequests }, 1)
        let bearer = try XCTUnwrap(standIns.sync { self.google.lastSignJwtBearer })
        XCTAssertTrue(standIns.sync { self.google.impersonatedTokens.contains(bearer) }, "signJwt was authorised by the impersonated token")
        XCTAssertEqual(standIns.sync { self.google.quotaProjects }, ["billed", "billed"], "generateAccessToken and signJwt")
        XCTAssertEqual(fleetEngineStatistics.rejected, 0)
    }

    func testTheProvidersIDTokenComesFromGenerateIdToken() throws {
        let audience = "https://token-provider-abc123-uc.a.run.app"
        let google = google
        standIns.sync { self.standIns.provider.bearerCheck = { google.isIDToken($0, for: audience) } }
        let sidecar = try sidecar(["--provider-id-token-audience", audience, "--oauth-token-endpoint", self.google.tokenURI],
                                  environment: try impersonationEnvironment(), provider: true)
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 200, sidecar.log)
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/trips/t1").status, 200, sidecar.log)
        XCTAssertEqual(standIns.sync { self.google.generateIdTokenRequests }, 1, "one ID token for every provider fetch")
        XCTAssertEqual(generateAccessTokenRequests, 0)
        XCTAssertFalse(sidecar.log.contains("eyJ"), "no token in the log")
    }

    // MARK: Errors in the client's terms (docs/CONTRACT.md §5)

    func testIAMRefusingTheImpersonationIsPermissionDeniedWithIAMsMessage() throws {
        let sidecar = try sidecar(["--signer", "adc", "--oauth-token-endpoint", google.tokenURI],
                                  environment: try impersonationEnvironment(target: "someone-else@p.iam.gserviceaccount.com"))
        defer { sidecar.stop() }
        let answer = try call(sidecar, "/v1/providers/p/vehicles/v1")
        XCTAssertEqual(answer.status, 403, answer.body)
        XCTAssertTrue(answer.body.contains("IAM generateAccessToken refused with HTTP 403: PERMISSION_DENIED: Permission 'iam.serviceAccounts.getAccessToken' denied"),
                      answer.body)
        assertNoTokenIn(answer.body + sidecar.log)
    }

    func testIAMFailingIsUnavailableAndAnUnusableAnswerIsBadGateway() throws {
        standIns.sync { self.google.impersonationFailure = .status(503) }
        let sidecar = try sidecar(["--signer", "adc", "--oauth-token-endpoint", google.tokenURI, "--provider-backoff-max", "0.2"],
                                  environment: try impersonationEnvironment())
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 503)
        usleep(300_000)
        standIns.sync { self.google.impersonationFailure = .garbage }
        let garbage = try call(sidecar, "/v1/providers/p/vehicles/v2")
        XCTAssertEqual(garbage.status, 502, garbage.body)
        XCTAssertTrue(garbage.body.contains("accessToken"), garbage.body)
        usleep(300_000)
        standIns.sync { self.google.impersonationFailure = nil }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v3").status, 200)
        XCTAssertEqual(tokenRequests, 1, "the source's token outlived the IAM failures")
    }

    func testARefusedSourceTokenIsDroppedAndGenerateAccessTokenAskedOnceMore() throws {
        let sidecar = try sidecar(["--signer", "adc", "--oauth-token-endpoint", google.tokenURI], environment: try impersonationEnvironment())
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 200, sidecar.log)
        standIns.sync {
            self.google.revokeAll()
            self.standIns.fleetEngine.unauthenticatedCalls = 1
        }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 200, "Fleet Engine's 401 drops the impersonated token" + sidecar.log)
        XCTAssertEqual(generateAccessTokenRequests, 3, "the first, then a 401 for the revoked source token, then its retry")
        XCTAssertEqual(tokenRequests, 2, "the source token was dropped and fetched again")
    }
}
