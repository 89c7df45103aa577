@testable import FleetTokenProxy
@testable import FleetTokenProxyStandIns
import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `--signer key-file:PATH` (docs/CONTRACT.md §4a): the sidecar signs each entity's JWT with a
/// service-account key, and the stand-in Fleet Engine verifies it against that account's
/// public key, as Fleet Engine does. Real sockets, the real binary, curl as the client.
final class KeyFileSignerTests: XCTestCase {
    var standIns: StandInHost!
    var directory: String!
    var keyFile: String { directory + "/key.json" }

    override func setUpWithError() throws {
        standIns = try StandInHost()
        directory = NSTemporaryDirectory() + "ftp-signer-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        standIns?.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// An account of project "p" (the tests' calls) that Fleet Engine knows the key of.
    func trustedAccount(keyID: String? = nil) throws -> StandInServiceAccount {
        let account = try StandInServiceAccount(project: "p", keyID: keyID)
        let trusted = account.trustedKey
        standIns.sync { self.standIns.fleetEngine.tokenCheck.trustedKeys.append(trusted) }
        return account
    }

    func sidecar(_ flags: [String], provider: Bool = false) throws -> SidecarProcess {
        try SidecarProcess(["--upstream", "http://\(standIns.fleetEngineAddress)"]
            + (provider ? ["--provider-url", standIns.providerTemplate] : []) + flags)
    }

    func status(_ sidecar: SidecarProcess, _ method: String, _ path: String, body: String? = nil) throws -> Int {
        var args = ["-o", "/dev/null", "-w", "%{http_code}", "-X", method]
        if let body { args += ["-H", "Content-Type: application/json", "--data", body] }
        return Int(try curl(args + [sidecar.baseURL + path]).stdout) ?? 0
    }

    /// The `kid` of the last token Fleet Engine saw.
    func lastKeyID() throws -> String {
        let authorization = try XCTUnwrap(standIns.sync { self.standIns.seenAuthorizations.last })
        let header = String(authorization.dropFirst("Bearer ".count).split(separator: ".")[0])
        var base64 = header.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        let json = try XCTUnwrap(Data(base64Encoded: base64))
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: json) as? [String: Any])
        return try XCTUnwrap(object["kid"] as? String)
    }

    /// Two trusted accounts' key files: one for vehicles (returned path), one at `keyFile`.
    func twoKeyFiles() throws -> (vehicles: StandInServiceAccount, rest: StandInServiceAccount, vehicleKey: String) {
        let vehicles = try trustedAccount()
        let rest = try trustedAccount()
        let vehicleKey = directory + "/vehicles.json"
        try vehicles.writeKeyFile(to: vehicleKey)
        try rest.writeKeyFile(to: keyFile)
        return (vehicles, rest, vehicleKey)
    }

    var fleetEngineStatistics: StandInFleetEngineStatistics { standIns.sync { self.standIns.fleetEngine.statistics } }
    var providerFetches: Int { standIns.sync { self.standIns.provider.totalFetches } }

    func testEveryTokenTypeIsSignedWithTheKeyFileAndAcceptedByFleetEngine() throws {
        let account = try trustedAccount()
        try account.writeKeyFile(to: keyFile)
        let sidecar = try sidecar(["--signer", "key-file:\(keyFile)"])
        defer { sidecar.stop() }

        let calls: [(String, String, String?)] = [
            ("GET", "/v1/providers/p/vehicles/v1", nil),
            ("GET", "/v1/providers/p/trips/t1", nil),
            ("GET", "/v1/providers/p/deliveryVehicles/d1", nil),
            ("GET", "/v1/providers/p/tasks/k1", nil),
            ("GET", "/v1/providers/p/taskTrackingInfo/x1", nil),
            ("GET", "/v1/providers/p/vehicles", nil),
            ("POST", "/v1/providers/p/tasks:batchCreate", #"{"requests":[]}"#),
        ]
        for (method, path, body) in calls {
            XCTAssertEqual(try status(sidecar, method, path, body: body), 200, "\(method) \(path)\n\(sidecar.log)")
        }
        // A second call per entity is served from the cache: one signature per entity.
        XCTAssertEqual(try status(sidecar, "GET", "/v1/providers/p/vehicles/v1"), 200)
        let statistics = fleetEngineStatistics
        XCTAssertEqual(statistics.accepted, calls.count + 1)
        XCTAssertEqual(statistics.rejected, 0, "\(statistics.rejectionsByReason)")
        XCTAssertEqual(try lastKeyID(), account.keyPair.keyID)
        XCTAssertEqual(providerFetches, 0)
        XCTAssertFalse(sidecar.log.contains("PRIVATE KEY"), sidecar.log)
    }

    func testAKeyOfAnotherAccountIsRefusedByFleetEngine() throws {
        // Fleet Engine knows this key for another account than the one the file names.
        let account = try StandInServiceAccount(project: "p")
        let other = try StandInServiceAccount(name: "someone-else", project: "p", keyID: account.keyPair.keyID)
        let trusted = other.trustedKey
        standIns.sync { self.standIns.fleetEngine.tokenCheck.trustedKeys.append(trusted) }
        try account.writeKeyFile(to: keyFile)
        let sidecar = try sidecar(["--signer", "key-file:\(keyFile)"])
        defer { sidecar.stop() }

        XCTAssertEqual(try status(sidecar, "GET", "/v1/providers/p/vehicles/v1"), 401)
        // Refused for that reason alone (the sidecar may sign once more after the 401).
        XCTAssertEqual(Set(fleetEngineStatistics.rejectionsByReason.keys), ["unknown_key_id"])
        XCTAssertEqual(fleetEngineStatistics.accepted, 0)
    }

    func testMixedSourcesSignSomeTypesAndFetchTheOthersFromTheProvider() throws {
        try trustedAccount().writeKeyFile(to: keyFile)
        let sidecar = try sidecar(["--signer", "vehicle,fleet=key-file:\(keyFile)"], provider: true)
        defer { sidecar.stop() }

        XCTAssertEqual(try status(sidecar, "GET", "/v1/providers/p/vehicles/v1"), 200, sidecar.log)
        XCTAssertEqual(try status(sidecar, "GET", "/v1/providers/p/vehicles"), 200)
        XCTAssertEqual(providerFetches, 0, "vehicle and fleet tokens are signed locally")
        XCTAssertEqual(try status(sidecar, "GET", "/v1/providers/p/trips/t1"), 200)
        XCTAssertEqual(try status(sidecar, "GET", "/v1/providers/p/tasks/k1"), 200)
        XCTAssertEqual(providerFetches, 2, "trip and task tokens come from the provider")
        XCTAssertEqual(fleetEngineStatistics.rejected, 0)
    }

    func testTwoKeyFilesSignTheTypesEachNames() throws {
        let (vehicles, rest, vehicleKey) = try twoKeyFiles()
        // The second flag has no TYPES: every type the first does not name.
        let sidecar = try sidecar(["--signer", "vehicle=key-file:\(vehicleKey)", "--signer", "key-file:\(keyFile)"])
        defer { sidecar.stop() }

        XCTAssertEqual(try status(sidecar, "GET", "/v1/providers/p/vehicles/v1"), 200, sidecar.log)
        XCTAssertEqual(try lastKeyID(), vehicles.keyPair.keyID)
        XCTAssertEqual(try status(sidecar, "GET", "/v1/providers/p/trips/t1"), 200)
        XCTAssertEqual(try lastKeyID(), rest.keyPair.keyID)
    }

    func testSIGHUPRotatesTheKeyAndABadOrOpenFileKeepsTheCurrentOne() throws {
        let old = try trustedAccount()
        try old.writeKeyFile(to: keyFile)
        let sidecar = try sidecar(["--signer", "key-file:\(keyFile)"])
        defer { sidecar.stop() }
        XCTAssertEqual(try status(sidecar, "GET", "/v1/providers/p/vehicles/v1"), 200, sidecar.log)
        XCTAssertEqual(try lastKeyID(), old.keyPair.keyID)

        let new = try trustedAccount()
        try new.writeKeyFile(to: keyFile)
        sidecar.signal(SIGHUP)
        XCTAssertTrue(sidecar.waitForLog("signing key reloaded"), sidecar.log)
        XCTAssertEqual(try status(sidecar, "GET", "/v1/providers/p/vehicles/v2"), 200)
        XCTAssertEqual(try lastKeyID(), new.keyPair.keyID, "the next token is signed with the new key")
        XCTAssertEqual(try status(sidecar, "GET", "/v1/providers/p/vehicles/v1"), 200)
        XCTAssertEqual(try lastKeyID(), old.keyPair.keyID, "a token already cached is kept")

        try "{\"client_email\": 42}".write(toFile: keyFile, atomically: true, encoding: .utf8)
        chmod(keyFile, 0o600)
        sidecar.signal(SIGHUP)
        XCTAssertTrue(sidecar.waitForLog("keeping the previous key"), sidecar.log)
        let lines = sidecar.log.split(separator: "\n").filter { $0.contains("signing key not reloaded") }
        XCTAssertEqual(lines.count, 1, sidecar.log)
        XCTAssertEqual(try status(sidecar, "GET", "/v1/providers/p/vehicles/v3"), 200)
        XCTAssertEqual(try lastKeyID(), new.keyPair.keyID)

        let newer = try trustedAccount()
        try newer.writeKeyFile(to: keyFile)
        chmod(keyFile, 0o644)
        sidecar.signal(SIGHUP)
        XCTAssertTrue(sidecar.waitForLog("group or others"), sidecar.log)
        XCTAssertEqual(try status(sidecar, "GET", "/v1/providers/p/vehicles/v4"), 200)
        XCTAssertEqual(try lastKeyID(), new.keyPair.keyID, "a key file open to others is not used")
        XCTAssertFalse(sidecar.log.contains("PRIVATE KEY"), sidecar.log)
    }

    // MARK: Refused at start: one line on stderr, exit 2

    func serve(_ flags: [String], environment: [String: String] = [:]) throws -> (status: Int32, stderr: String) {
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("FLEET_TOKEN_PROXY_") }
        env.merge(environment) { $1 }
        let result = try runCommand(SidecarProcess.binary.path, ["serve", "--listen", "127.0.0.1:0"] + flags, environment: env)
        return (result.status, result.stderr)
    }

    func assertRefused(_ flags: [String], saying text: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let result = try serve(flags)
        XCTAssertEqual(result.status, 2, result.stderr, file: file, line: line)
        XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, result.stderr, file: file, line: line)
        XCTAssertTrue(result.stderr.contains(text), result.stderr, file: file, line: line)
        XCTAssertFalse(result.stderr.contains("PRIVATE KEY"), result.stderr, file: file, line: line)
    }

    func testAKeyFileReadableByGroupOrOthersIsRefusedAtStart() throws {
        try StandInServiceAccount(project: "p").writeKeyFile(to: keyFile)
        chmod(keyFile, 0o640)
        try assertRefused(["--signer", "key-file:\(keyFile)"], saying: "is open to group or others (mode 0640)")
        chmod(keyFile, 0o604)
        try assertRefused(["--signer", "key-file:\(keyFile)"], saying: "chmod 600")
    }

    func testATypeWithNoSourceIsRefusedAtStart() throws {
        try StandInServiceAccount(project: "p").writeKeyFile(to: keyFile)
        try assertRefused(["--signer", "vehicle,trip=key-file:\(keyFile)"],
                          saying: "no token source for delivery_vehicle, task, tracking, fleet")
    }

    func testOverlappingSignersAndBadKeysAreRefused() throws {
        try StandInServiceAccount(project: "p").writeKeyFile(to: keyFile)
        try assertRefused(["--signer", "vehicle,trip=key-file:\(keyFile)", "--signer", "trip=key-file:\(keyFile)"],
                          saying: "trip is named twice")
        try assertRefused(["--signer", "key-file:\(directory!)/missing.json"], saying: "cannot be read")
        try assertRefused(["--signer", "key-file:\(keyFile)", "--signed-token-lifetime", "7200"], saying: "60 to 3600")
        let notAKey = directory + "/not-a-key.json"
        FileManager.default.createFile(atPath: notAKey, contents: Data(#"{"client_email":"a@p.iam.gserviceaccount.com","private_key_id":"k","private_key":"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"}"#.utf8), attributes: [.posixPermissions: 0o600])
        try assertRefused(["--signer", "key-file:\(notAKey)"], saying: "the private key cannot be read")
    }

    func testSignersComeFromTheEnvironmentOneALine() throws {
        let (vehicles, rest, vehicleKey) = try twoKeyFiles()
        let sidecar = try SidecarProcess([], environment: [
            "FLEET_TOKEN_PROXY_UPSTREAM": "http://\(standIns.fleetEngineAddress)",
            "FLEET_TOKEN_PROXY_SIGNER": "vehicle=key-file:\(vehicleKey)\nkey-file:\(keyFile)\n",
            "FLEET_TOKEN_PROXY_SIGNED_TOKEN_LIFETIME": "600",
        ])
        defer { sidecar.stop() }
        XCTAssertEqual(try status(sidecar, "GET", "/v1/providers/p/vehicles/v1"), 200, sidecar.log)
        XCTAssertEqual(try lastKeyID(), vehicles.keyPair.keyID)
        XCTAssertEqual(try status(sidecar, "GET", "/v1/providers/p/trips/t1"), 200)
        XCTAssertEqual(try lastKeyID(), rest.keyPair.keyID)
    }
}
