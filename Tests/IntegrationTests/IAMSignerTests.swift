@testable import FleetTokenProxy
@testable import FleetTokenProxyStandIns
import Foundation
import XCTest

/// `--signer iam:EMAIL` (docs/CONTRACT.md §4a, §5): each entity's claims signed by the stand-in
/// IAM `signJwt`, authorised by an ADC access token from a key file, a user's refresh token or
/// the metadata server; the stand-in Fleet Engine verifies the JWT against the account's key.
final class IAMSignerTests: GoogleCredentialsTestCase {
    var iamFlags: [String] { ["--signer", "iam:\(account)", "--iam-endpoint", "http://\(standIns.googleAddress)"] }
    var signJwtRequests: Int { standIns.sync { self.google.signJwtRequests } }

    /// The `kid` of the JWT Fleet Engine saw last.
    func lastKeyID() throws -> String? {
        let jwt = try XCTUnwrap(lastAuthorization).dropFirst("Bearer ".count)
        let header = try XCTUnwrap(Base64URL.decode(jwt.split(separator: ".")[0].utf8))
        guard case .object(let members)? = JSONish.parse(header) else { return nil }
        return members["kid"]?.stringValue
    }

    func testEveryTypeIsSignedByIAMAsTheAccountWithAKeyFilesAccessToken() throws {
        let sidecar = try sidecar(iamFlags, environment: try keyFileEnvironment())
        defer { sidecar.stop() }
        let paths = ["/v1/providers/p/vehicles/v1", "/v1/providers/p/trips/t1", "/v1/providers/p/deliveryVehicles/d1",
                     "/v1/providers/p/tasks/k1", "/v1/providers/p/taskTrackingInfo/x1", "/v1/providers/p/vehicles"]
        for path in paths {
            XCTAssertEqual(try call(sidecar, path).status, 200, path + sidecar.log)
        }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 200)
        XCTAssertEqual(signJwtRequests, paths.count, "one signature per entity; a cached token is reused")
        XCTAssertEqual(tokenRequests, 1, "one access token for every signature")
        XCTAssertEqual(try lastKeyID(), google.account.keyPair.keyID, "IAM's keyId is the JWT's kid")
        XCTAssertEqual(fleetEngineStatistics.rejected, 0)
        assertNoTokenIn(sidecar.log)
        XCTAssertFalse(sidecar.log.contains("eyJ"), "no JWT in the log")
    }

    func testAUsersCredentialsSendTheirQuotaProjectToIAM() throws {
        try writeGcloudUserFile()
        let sidecar = try sidecar(iamFlags + ["--oauth-token-endpoint", google.tokenURI], environment: [:])
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/trips/t1").status, 200, sidecar.log)
        XCTAssertEqual(standIns.sync { self.google.quotaProjects }, ["p"])
    }

    func testTheMetadataServersTokenAuthorisesIAM() throws {
        let sidecar = try sidecar(iamFlags, environment: ["GCE_METADATA_HOST": standIns.googleAddress])
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/tasks/k1").status, 200, sidecar.log)
        XCTAssertEqual(standIns.sync { self.google.metadataRequests }, 1)
        XCTAssertEqual(standIns.sync { self.google.quotaProjects }, [], "no quota project for a service account")
    }

    func testGoogleCloudQuotaProjectBillsIAMButNeverReachesTheMetadataServer() throws {
        let sidecar = try sidecar(iamFlags, environment: ["GCE_METADATA_HOST": standIns.googleAddress, "GOOGLE_CLOUD_QUOTA_PROJECT": "from-env"])
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/tasks/k1").status, 200, sidecar.log)
        XCTAssertEqual(standIns.sync { self.google.quotaProjects }, ["from-env"], "as Google's libraries apply it to the metadata server's token")
        XCTAssertEqual(standIns.sync { self.google.tokenQuotaProjects }, [], "never on the call that makes the token")
    }

    func testGoogleCloudQuotaProjectWinsOverTheUsersOwn() throws {
        try writeGcloudUserFile()
        let sidecar = try sidecar(iamFlags + ["--oauth-token-endpoint", google.tokenURI], environment: ["GOOGLE_CLOUD_QUOTA_PROJECT": "from-env"])
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/trips/t1").status, 200, sidecar.log)
        XCTAssertEqual(standIns.sync { self.google.quotaProjects }, ["from-env"])
        XCTAssertEqual(standIns.sync { self.google.tokenQuotaProjects }, [])
    }

    func testEachTypeItsOwnSourceIAMADCAndTheProvider() throws {
        let sidecar = try sidecar(["--signer", "vehicle=iam:\(account)", "--iam-endpoint", "http://\(standIns.googleAddress)",
                                   "--signer", "trip=adc"], environment: try keyFileEnvironment(), provider: true)
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 200, sidecar.log)
        XCTAssertEqual(try lastKeyID(), google.account.keyPair.keyID)
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/trips/t1").status, 200, sidecar.log)
        XCTAssertTrue(lastAuthorization?.hasPrefix("Bearer " + StandInAccessToken.prefix) == true)
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/tasks/k1").status, 200, sidecar.log)
        XCTAssertEqual(try lastKeyID(), standIns.keyPair.keyID, "a task's token is the provider's")
        XCTAssertEqual(signJwtRequests, 1)
        XCTAssertEqual(tokenRequests, 1, "IAM and adc share the one access token")
    }

    func testARevokedAccessTokenIsRefreshedAndTheSignatureAskedForOnceMore() throws {
        let sidecar = try sidecar(iamFlags, environment: try keyFileEnvironment())
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 200, sidecar.log)
        standIns.sync { self.google.revokeAll() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v2").status, 200, sidecar.log)
        XCTAssertEqual(tokenRequests, 2)
        XCTAssertEqual(signJwtRequests, 3, "the 401 and its retry")
    }

    // MARK: Errors in the client's terms (docs/CONTRACT.md §5)

    func testIAMRefusingIsPermissionDeniedWithIAMsOwnMessage() throws {
        let sidecar = try sidecar(["--signer", "iam:someone-else@p.iam.gserviceaccount.com", "--iam-endpoint", "http://\(standIns.googleAddress)"],
                                  environment: try keyFileEnvironment())
        defer { sidecar.stop() }
        let answer = try call(sidecar, "/v1/providers/p/vehicles/v1")
        XCTAssertEqual(answer.status, 403, answer.body)
        XCTAssertTrue(answer.body.contains("PERMISSION_DENIED: Permission 'iam.serviceAccounts.signJwt' denied"), answer.body)
        assertNoTokenIn(answer.body + sidecar.log)
    }

    func testIAMFailingIsUnavailableAndAnUnusableAnswerIsBadGateway() throws {
        standIns.sync { self.google.signJwtFailure = .status(503) }
        let sidecar = try sidecar(iamFlags + ["--provider-backoff-max", "0.2", "--provider-timeout", "1"], environment: try keyFileEnvironment())
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 503)
        standIns.sync { self.google.signJwtFailure = .status(429) }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v2").status, 503)
        standIns.sync { self.google.signJwtFailure = .garbage }
        let garbage = try call(sidecar, "/v1/providers/p/vehicles/v3")
        XCTAssertEqual(garbage.status, 502, garbage.body)
        XCTAssertTrue(garbage.body.contains("signedJwt"), garbage.body)
        standIns.sync { self.google.signJwtFailure = .delay(3) }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v4").status, 503, "slower than --provider-timeout")
        standIns.sync { self.google.signJwtFailure = nil }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v5").status, 200)
    }

    func testAJwtIAMSignedForAnotherEntityIsStoppedByTheClaimCheck() throws {
        standIns.sync { self.google.signsForAnotherEntity = true }
        let sidecar = try sidecar(iamFlags, environment: try keyFileEnvironment())
        defer { sidecar.stop() }
        let answer = try call(sidecar, "/v1/providers/p/vehicles/v1")
        XCTAssertEqual(answer.status, 502, answer.body)
        XCTAssertTrue(answer.body.contains("IAM signJwt answered a token for vehicle") && answer.body.contains("someone-else"), answer.body)
        XCTAssertEqual(fleetEngineStatistics.accepted + fleetEngineStatistics.rejected, 0, "nothing reached Fleet Engine")
    }

    func testABadAccountIsRefusedAtStart() throws {
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("FLEET_TOKEN_PROXY_") }
        env["HOME"] = directory
        let result = try runCommand(SidecarProcess.binary.path, ["serve", "--signer", "iam:not an email"], environment: env)
        XCTAssertEqual(result.status, 2, result.stderr)
        XCTAssertTrue(result.stderr.contains("iam:NAME@PROJECT.iam.gserviceaccount.com"), result.stderr)
    }

    func testTheDemoRunsItsWholePathThroughIAM() throws {
        let result = try runCommand(SidecarProcess.binary.path, ["demo", "--signer", "iam", "--duration", "1", "--vehicles", "10"])
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("tokens signed with IAM signJwt"), result.stdout)
        XCTAssertTrue(result.stdout.contains("workload identity federation: OIDC token, STS, generateAccessToken"), "no key anywhere: \(result.stdout)")
        XCTAssertTrue(result.stdout.contains("rejected by stand-in Fleet Engine           0"), result.stdout)
    }
}
