@testable import FleetTokenProxy
@testable import FleetTokenProxyStandIns
import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `--signer adc` (docs/CONTRACT.md §4a, §5): the access token of Application Default
/// Credentials, found as Google's libraries find them (a key file, a user's refresh token, the
/// metadata server), goes to Fleet Engine itself. Real sockets, the real binary, curl, and the
/// stand-in Google whose account the stand-in Fleet Engine knows.
final class ADCSignerTests: GoogleCredentialsTestCase {
    func testAServiceAccountKeyFileGivesOneAccessTokenForEveryTypeAndFleetEngineAcceptsIt() throws {
        let sidecar = try sidecar(["--signer", "adc"], environment: try keyFileEnvironment())
        defer { sidecar.stop() }
        for path in ["/v1/providers/p/vehicles/v1", "/v1/providers/p/trips/t1", "/v1/providers/p/deliveryVehicles/d1",
                     "/v1/providers/p/tasks/k1", "/v1/providers/p/taskTrackingInfo/x1", "/v1/providers/p/vehicles"] {
            XCTAssertEqual(try call(sidecar, path).status, 200, path + sidecar.log)
        }
        XCTAssertEqual(tokenRequests, 1, "one access token, fetched once, for every entity")
        XCTAssertEqual(fleetEngineStatistics.rejected, 0)
        XCTAssertTrue(lastAuthorization?.hasPrefix("Bearer " + StandInAccessToken.prefix) == true)
        XCTAssertTrue(sidecar.log.contains("application default credentials found"), sidecar.log)
        assertNoTokenIn(sidecar.log)
    }

    func testAnAuthorizedUserExchangesItsRefreshTokenAtTheConfiguredEndpoint() throws {
        try writeGcloudUserFile()
        let sidecar = try sidecar(["--signer", "adc", "--oauth-token-endpoint", google.tokenURI], environment: [:])
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 200, sidecar.log)
        XCTAssertEqual(tokenRequests, 1)
        XCTAssertFalse(sidecar.log.contains("s3cret") || sidecar.log.contains("r3fresh"), sidecar.log)
    }

    func testTheMetadataServerNamedByGCEMetadataHostGivesTheToken() throws {
        let sidecar = try sidecar(["--signer", "adc"], environment: ["GCE_METADATA_HOST": standIns.googleAddress])
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/trips/t1").status, 200, sidecar.log)
        XCTAssertEqual(standIns.sync { self.google.metadataRequests }, 1)
        XCTAssertTrue(sidecar.log.contains("the metadata server at \(standIns.googleAddress)"), sidecar.log)
    }

    func testAServerAtGCEMetadataHostThatDoesNotSayMetadataFlavorGoogleIsNotBelieved() throws {
        standIns.sync { self.google.saysMetadataFlavor = false }
        let sidecar = try sidecar(["--signer", "adc", "--provider-backoff-max", "0.2"], environment: ["GCE_METADATA_HOST": standIns.googleAddress])
        defer { sidecar.stop() }
        let answer = try call(sidecar, "/v1/providers/p/trips/t1")
        XCTAssertEqual(answer.status, 502, answer.body)
        XCTAssertTrue(answer.body.contains("answered without Metadata-Flavor: Google, so it is not Google's metadata server"), answer.body)
        XCTAssertEqual(standIns.sync { self.google.metadataRequests }, 1, "it was asked, and its token not used")
        XCTAssertEqual(fleetEngineStatistics.accepted + fleetEngineStatistics.rejected, 0, "nothing reached Fleet Engine")
        assertNoTokenIn(answer.body + sidecar.log)
        standIns.sync { self.google.saysMetadataFlavor = true }
        usleep(300_000)
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/trips/t1").status, 200, "once it says so, after the backoff" + sidecar.log)
    }

    /// docs/CONTRACT.md §4a: the ADC token's quota project goes with every call it authorises,
    /// over either client protocol, replacing a client's own (which would bill the sidecar's
    /// credentials to a project of the client's choosing); a call a provider's token authorises
    /// keeps the client's field as it came.
    func testTheQuotaProjectGoesWithEveryCallTheADCTokenAuthorisesAndOnlyThose() throws {
        let sidecar = try sidecar(["--signer", "vehicle=adc", "--upstream-protocol", "http1.1"],
                                  environment: try keyFileEnvironment().merging(["GOOGLE_CLOUD_QUOTA_PROJECT": "billed-here"]) { $1 },
                                  provider: true)
        defer { sidecar.stop() }
        func quotaFields(_ path: String, _ protocolFlags: [String]) throws -> [String] {
            let status = try curl(protocolFlags + ["-o", "/dev/null", "-w", "%{http_code}", "-H", "X-Goog-User-Project: client-choice",
                                                   sidecar.baseURL + path]).stdout
            XCTAssertEqual(status, "200", path + sidecar.log)
            return standIns.sync { self.standIns.seenRequests.last?.headers.values("x-goog-user-project") ?? ["(no request)"] }
        }
        XCTAssertEqual(try quotaFields("/v1/providers/p/vehicles/q1", ["--http1.1"]), ["billed-here"])
        XCTAssertEqual(try quotaFields("/v1/providers/p/vehicles/q2", ["--http2-prior-knowledge"]), ["billed-here"], "an h2c client's call too")
        XCTAssertEqual(try quotaFields("/v1/providers/p/trips/q3", ["--http1.1"]), ["client-choice"], "a provider's token: the client's field")
        XCTAssertEqual(try quotaFields("/v1/providers/p/trips/q4", ["--http2-prior-knowledge"]), ["client-choice"])
    }

    func testTypesMixSourcesTheProviderForSomeADCForOthers() throws {
        let sidecar = try sidecar(["--signer", "vehicle,fleet=adc"], environment: try keyFileEnvironment(), provider: true)
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 200, sidecar.log)
        XCTAssertTrue(lastAuthorization?.hasPrefix("Bearer " + StandInAccessToken.prefix) == true)
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/trips/t1").status, 200, sidecar.log)
        XCTAssertFalse(lastAuthorization?.hasPrefix("Bearer " + StandInAccessToken.prefix) == true, "a trip's token is the provider's JWT")
        XCTAssertEqual(standIns.sync { self.standIns.provider.totalFetches }, 1)
        XCTAssertEqual(tokenRequests, 1)
    }

    func testARevokedAccessTokenIsDroppedAndTheCallRetriedOnceWithAFreshOne() throws {
        let sidecar = try sidecar(["--signer", "adc"], environment: try keyFileEnvironment())
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 200, sidecar.log)
        standIns.sync { self.standIns.fleetEngine.unauthenticatedCalls = 1 }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 200, "the retry carries a fresh token")
        XCTAssertEqual(tokenRequests, 2, "the refused token was dropped from the ADC cache too")
    }

    // MARK: Errors in the client's terms (docs/CONTRACT.md §5)

    func testARefusingTokenEndpointIsPermissionDeniedWithItsOwnError() throws {
        standIns.sync { self.google.failure = .refuse(status: 400, error: "invalid_grant", description: "Invalid JWT Signature.") }
        let sidecar = try sidecar(["--signer", "adc"], environment: try keyFileEnvironment())
        defer { sidecar.stop() }
        let answer = try call(sidecar, "/v1/providers/p/vehicles/v1")
        XCTAssertEqual(answer.status, 403, answer.body)
        XCTAssertTrue(answer.body.contains("PERMISSION_DENIED"), answer.body)
        XCTAssertTrue(answer.body.contains("invalid_grant: Invalid JWT Signature."), answer.body)
        assertNoTokenIn(answer.body + sidecar.log)
    }

    func testAFailingTokenEndpointIsUnavailableAndAnUnusableAnswerIsBadGateway() throws {
        standIns.sync { self.google.failure = .status(429) }
        let sidecar = try sidecar(["--signer", "adc", "--provider-backoff-max", "0.2", "--provider-timeout", "1"], environment: try keyFileEnvironment())
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 503)
        usleep(300_000)
        standIns.sync { self.google.failure = .status(500) }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v2").status, 503)
        usleep(300_000)
        standIns.sync { self.google.failure = .garbage }
        let garbage = try call(sidecar, "/v1/providers/p/vehicles/v3")
        XCTAssertEqual(garbage.status, 502, garbage.body)
        XCTAssertTrue(garbage.body.contains("access_token"), garbage.body)
        usleep(300_000)
        standIns.sync { self.google.failure = .delay(3) }
        let slow = try call(sidecar, "/v1/providers/p/vehicles/v4")
        XCTAssertEqual(slow.status, 503, slow.body)
    }

    func testATokenEndpointDownAtStartIsNotAStartUpErrorAndItsRecoveryIsUsed() throws {
        let port = try freePort()
        let sidecar = try sidecar(["--signer", "adc", "--provider-backoff-max", "0.5", "--provider-timeout", "2"],
                                  environment: ["GCE_METADATA_HOST": "127.0.0.1:\(port)"])
        defer { sidecar.stop() }
        let down = try call(sidecar, "/v1/providers/p/vehicles/v1")
        XCTAssertEqual(down.status, 503, down.body)
        XCTAssertTrue(down.body.contains("the metadata server unreachable"), down.body)
        try standIns.serveGoogle(onPort: port)
        var status = 0
        for _ in 0..<20 where status != 200 {
            usleep(250_000)
            status = try call(sidecar, "/v1/providers/p/vehicles/v1").status
        }
        XCTAssertEqual(status, 200, sidecar.log)
    }

    func testNoCredentialsAnywhereIsRefusedAtStartNamingWhereItLooked() throws {
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("FLEET_TOKEN_PROXY_") }
        env.merge(["HOME": directory, "GOOGLE_APPLICATION_CREDENTIALS": "", "GCE_METADATA_HOST": ""]) { $1 }
        let result = try runCommand(SidecarProcess.binary.path, ["serve", "--listen", "127.0.0.1:0", "--signer", "adc",
                                                                 "--upstream", "http://\(standIns.fleetEngineAddress)"], environment: env)
        XCTAssertEqual(result.status, 2, result.stderr)
        XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, result.stderr)
        XCTAssertTrue(result.stderr.contains("no Application Default Credentials"), result.stderr)
        XCTAssertTrue(result.stderr.contains(directory + "/.config/gcloud/application_default_credentials.json"), result.stderr)
    }

    // MARK: The metadata server probe, the last place looked

    func testTheProbeKnowsGooglesMetadataServerFromAnotherServerOrNone() throws {
        func probe(_ address: String) -> Bool {
            let port = UInt16(address.split(separator: ":").last!)!
            return MetadataServerProbe.answers(host: "127.0.0.1", port: port, within: 2)
        }
        XCTAssertTrue(probe(standIns.googleAddress), "the stand-in Google answers as the metadata server does")
        XCTAssertFalse(probe(standIns.fleetEngineAddress), "another HTTP server does not say Metadata-Flavor: Google")
        standIns.sync { self.google.saysMetadataFlavor = false }
        XCTAssertFalse(probe(standIns.googleAddress), "the same server, once it does not say so")
        let started = Date()
        XCTAssertFalse(probe("127.0.0.1:\(try freePort())"))
        XCTAssertLessThan(Date().timeIntervalSince(started), 1, "a refused connection ends the probe at once")
    }
}
