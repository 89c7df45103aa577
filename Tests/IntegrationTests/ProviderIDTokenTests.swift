@testable import FleetTokenProxy
@testable import FleetTokenProxyStandIns
import Foundation
import XCTest

/// `--provider-id-token-audience AUD` (docs/CONTRACT.md §4a): a provider behind Google IAM gets a
/// Google-signed ID token for AUD as `Authorization: Bearer` on each request, from the metadata
/// server's identity endpoint or a service account's `target_audience` assertion; a user's
/// credentials cannot mint one, which stops start-up.
final class ProviderIDTokenTests: GoogleCredentialsTestCase {
    let audience = "https://token-provider-abc123-uc.a.run.app"

    override func setUpWithError() throws {
        try super.setUpWithError()
        let google = google
        let audience = audience
        standIns.sync { self.standIns.provider.bearerCheck = { google.isIDToken($0, for: audience) } }
    }

    var identityRequests: Int { standIns.sync { self.google.identityRequests } }

    func testTheMetadataServersIDTokenReachesTheProviderAndIsReused() throws {
        let sidecar = try sidecar(["--provider-id-token-audience", audience], environment: ["GCE_METADATA_HOST": standIns.googleAddress], provider: true)
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 200, sidecar.log)
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/trips/t1").status, 200, sidecar.log)
        XCTAssertEqual(identityRequests, 1, "one ID token for every provider fetch")
        XCTAssertEqual(standIns.sync { self.standIns.provider.totalFetches }, 2)
        XCTAssertFalse(sidecar.log.contains("eyJ"), "no token in the log")
    }

    func testAMetadataServerThatDoesNotSayMetadataFlavorGoogleGivesNoIDToken() throws {
        standIns.sync { self.google.saysMetadataFlavor = false }
        let sidecar = try sidecar(["--provider-id-token-audience", audience], environment: ["GCE_METADATA_HOST": standIns.googleAddress], provider: true)
        defer { sidecar.stop() }
        let answer = try call(sidecar, "/v1/providers/p/vehicles/v1")
        XCTAssertEqual(answer.status, 502, answer.body)
        XCTAssertTrue(answer.body.contains("without Metadata-Flavor: Google"), answer.body)
        XCTAssertEqual(identityRequests, 1)
        XCTAssertEqual(standIns.sync { self.standIns.provider.totalFetches }, 0, "the provider is not asked without the ID token")
    }

    func testAServiceAccountKeyGetsItsIDTokenFromTheTokenEndpoint() throws {
        let sidecar = try sidecar(["--provider-id-token-audience", audience], environment: try keyFileEnvironment(), provider: true)
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/tasks/k1").status, 200, sidecar.log)
        XCTAssertEqual(identityRequests, 1)
        XCTAssertEqual(tokenRequests, 1)
    }

    func testWithoutTheIDTokenTheProviderRefuses() throws {
        let sidecar = try sidecar([], environment: try keyFileEnvironment(), provider: true)
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 403, "the stand-in provider insists on the ID token")
    }

    func testAUsersCredentialsCannotMintAnIDTokenAndStopStartUp() throws {
        try writeGcloudUserFile()
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("FLEET_TOKEN_PROXY_") }
        env.merge(["HOME": directory, "GOOGLE_APPLICATION_CREDENTIALS": "", "GCE_METADATA_HOST": ""]) { $1 }
        let result = try runCommand(SidecarProcess.binary.path, [
            "serve", "--listen", "127.0.0.1:0", "--upstream", "http://\(standIns.fleetEngineAddress)",
            "--provider-url", standIns.providerTemplate, "--provider-id-token-audience", audience,
        ], environment: env)
        XCTAssertEqual(result.status, 2, result.stderr)
        XCTAssertTrue(result.stderr.contains("cannot mint an ID token for an arbitrary audience"), result.stderr)
        XCTAssertFalse(result.stderr.contains("s3cret") || result.stderr.contains("r3fresh"), result.stderr)
    }

    func testAnAudienceWithNoProviderToAuthenticateToIsRefused() throws {
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("FLEET_TOKEN_PROXY_") }
        env["HOME"] = directory
        let result = try runCommand(SidecarProcess.binary.path, [
            "serve", "--signer", "adc", "--provider-id-token-audience", audience,
        ], environment: env)
        XCTAssertEqual(result.status, 2, result.stderr)
        XCTAssertTrue(result.stderr.contains("which no token type uses"), result.stderr)
    }
}
