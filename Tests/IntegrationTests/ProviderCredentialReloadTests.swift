@testable import FleetTokenProxy
import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `--provider-header-file` and SIGHUP: a rotated backend credential is used for the next
/// provider request, without a restart, keeping cached tokens and open connections.
final class ProviderCredentialReloadTests: XCTestCase {
    var standIns: StandInHost!
    var headerFile: String!

    override func setUpWithError() throws {
        standIns = try StandInHost()
        headerFile = NSTemporaryDirectory() + "ftp-headers-\(UUID().uuidString.prefix(8))"
    }

    override func tearDown() {
        standIns?.stop()
        unlink(headerFile)
    }

    func requireCredential(_ value: String) {
        standIns.sync { self.standIns.provider.requiredHeader = (name: "X-Backend-Key", value: value) }
    }

    func fetches(_ id: String) -> Int {
        standIns.sync { self.standIns.provider.fetchesByEntity[EntityKey(provider: "p", type: .vehicle, id: id), default: 0] }
    }

    func testSIGHUPRotatesTheProviderCredentialAndKeepsTokensAndConnections() throws {
        try "# rotated by the secrets agent\nX-Backend-Key: old-secret\n".write(toFile: headerFile, atomically: true, encoding: .utf8)
        requireCredential("old-secret")
        let sidecar = try SidecarProcess([
            "--upstream", "http://\(standIns.fleetEngineAddress)", "--provider-url", standIns.providerTemplate,
            "--provider-header-file", headerFile,
        ])
        defer { sidecar.stop() }
        let client = try KeepAliveClient(address: sidecar.address)
        XCTAssertEqual(client.get("/v1/providers/p/vehicles/v1"), 200)

        // The provider rotates: the old credential is refused from now on.
        requireCredential("new-secret")
        XCTAssertEqual(client.get("/v1/providers/p/vehicles/v2"), 403, "the old credential must no longer work")

        try "X-Backend-Key: new-secret\n".write(toFile: headerFile, atomically: true, encoding: .utf8)
        sidecar.signal(SIGHUP)
        XCTAssertTrue(sidecar.waitForLog("provider headers reloaded"), sidecar.log)

        // Same connection, new credential; v1's token is still cached (no second fetch).
        XCTAssertEqual(client.get("/v1/providers/p/vehicles/v3"), 200)
        XCTAssertEqual(client.get("/v1/providers/p/vehicles/v1"), 200)
        XCTAssertEqual(fetches("v1"), 1, "the cached token survived the reload")
        XCTAssertEqual(fetches("v3"), 1)
        XCTAssertFalse(sidecar.log.contains("new-secret") || sidecar.log.contains("old-secret"), "a credential is in the log")
    }

    func testABadHeaderFileOnSIGHUPKeepsThePreviousCredential() throws {
        try "X-Backend-Key: good-secret\n".write(toFile: headerFile, atomically: true, encoding: .utf8)
        requireCredential("good-secret")
        let sidecar = try SidecarProcess([
            "--upstream", "http://\(standIns.fleetEngineAddress)", "--provider-url", standIns.providerTemplate,
            "--provider-header-file", headerFile,
        ])
        defer { sidecar.stop() }
        try "this line has no colon\n".write(toFile: headerFile, atomically: true, encoding: .utf8)
        sidecar.signal(SIGHUP)
        XCTAssertTrue(sidecar.waitForLog("keeping the previous headers"), sidecar.log)
        XCTAssertEqual(try httpGet(sidecar.baseURL + "/v1/providers/p/vehicles/v9").status, 200)
    }
}
