@testable import FleetTokenProxyStandIns
import Foundation
import XCTest

/// `serve --check`: start-up's checks without the start. A good configuration exits 0 with one
/// line on stdout saying what would run; a bad one exits 2 with the very line a failed start
/// prints; nothing is bound (a port in use is no error) and nothing is dialled.
final class ConfigCheckTests: XCTestCase {
    let provider = ["--provider-url", "http://127.0.0.1:9/token/{type}/{id}?key=s3cr3t"]
    var scratch: URL!

    override func setUpWithError() throws {
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("check-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: scratch)
    }

    /// `serve ARGS`, under timeout(1) so that a configuration that wrongly starts fails the test
    /// instead of hanging it.
    func run(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, stdout: String, stderr: String) {
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("FLEET_TOKEN_PROXY_") }
        env["GOOGLE_APPLICATION_CREDENTIALS"] = scratch.appendingPathComponent("no-adc.json").path
        env.merge(environment) { $1 }
        return try runCommand("/usr/bin/timeout", ["10", SidecarProcess.binary.path, "serve"] + arguments, environment: env)
    }

    func file(_ name: String, _ text: String, mode: Int) throws -> String {
        let url = scratch.appendingPathComponent(name)
        try text.write(to: url, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: url.path)
        return url.path
    }

    func testAGoodConfigurationExitsZeroWithOneLineSayingWhatWouldRun() throws {
        let headers = try file("headers", "X-Backend-Key: s3cr3t-header\n", mode: 0o600)
        let result = try run(["--check"] + provider + ["--listen", "127.0.0.1:4190", "--admin-listen", "127.0.0.1:4191",
                                         "--provider-header-file", headers, "--upstream", "http://127.0.0.1:9"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stderr, "")
        XCTAssertEqual(result.stdout, """
            fleet-token-proxy: configuration ok: would serve on 127.0.0.1:4190 (admin 127.0.0.1:4191), forwarding to \
            http://127.0.0.1:9 (auto); tokens: every type from the provider http://127.0.0.1:9/token/{type}/{id}?key=…

            """)
        XCTAssertFalse(result.stdout.contains("s3cr3t"), "no secret in the line")
    }

    func testTheVariablesAreCheckedAndTheLineSaysWhichSourceEachTypeHas() throws {
        let key = try file("key.json", "{}", mode: 0o600)
        let result = try run(["--check"], environment: [
            "FLEET_TOKEN_PROXY_PROVIDER_URL": "http://127.0.0.1:9/t/{id}",
            "FLEET_TOKEN_PROXY_SIGNER": "vehicle,fleet=key-file:\(key)",
            "FLEET_TOKEN_PROXY_LISTEN": "unix:\(scratch.path)/proxy.sock",
        ])
        // The key file is read as at start: `{}` is not a service-account key.
        XCTAssertEqual(result.status, 2, result.stdout)
        XCTAssertTrue(result.stderr.contains("key file \(key)"), result.stderr)
        try StandInServiceAccount(project: "p").writeKeyFile(to: key)
        let good = try run(["--check"], environment: [
            "FLEET_TOKEN_PROXY_PROVIDER_URL": "http://127.0.0.1:9/t/{id}",
            "FLEET_TOKEN_PROXY_SIGNER": "vehicle,fleet=key-file:\(key)",
            "FLEET_TOKEN_PROXY_LISTEN": "unix:\(scratch.path)/proxy.sock",
        ])
        XCTAssertEqual(good.status, 0, good.stderr)
        XCTAssertTrue(good.stdout.hasSuffix(
            "tokens: vehicle, fleet from key-file:\(key); trip, delivery_vehicle, task, tracking from the provider http://127.0.0.1:9/t/{id}\n"),
            good.stdout)
        XCTAssertFalse(FileManager.default.fileExists(atPath: "\(scratch.path)/proxy.sock"), "the unix socket is not made")
    }

    /// Each kind of bad configuration: exit 2 and the same one line as the start that would fail.
    func testEachKindOfBadConfigurationFailsWithTheLineAFailedStartPrints() throws {
        let openKey = scratch.appendingPathComponent("open-key.json").path
        try StandInServiceAccount(project: "p").writeKeyFile(to: openKey)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: openKey)
        let cases: [(what: String, arguments: [String], environment: [String: String])] = [
            ("unknown flag", provider + ["--no-such-flag"], [:]),
            ("bad number", provider + ["--refresh-margin", "soon"], [:]),
            ("bad variable", provider, ["FLEET_TOKEN_PROXY_LAZY_REFRESH": "maybe"]),
            ("no token source", [], [:]),
            ("bad template", ["--provider-url", "http://127.0.0.1:9/t/{vehicle}"], [:]),
            ("non-loopback listener", provider + ["--listen", "0.0.0.0:4180"], [:]),
            ("non-loopback variable", provider, ["FLEET_TOKEN_PROXY_ADMIN_LISTEN": "0.0.0.0:4181"]),
            ("unreadable CA file", provider + ["--upstream-ca-file", "/nonexistent/ca.pem"], [:]),
            ("missing header file", provider + ["--provider-header-file", "/nonexistent/headers"], [:]),
            ("key file open to others", ["--signer", "key-file:\(openKey)"], [:]),
            ("no ADC", provider + ["--signer", "fleet=adc"], [:]),
        ]
        for (what, arguments, environment) in cases {
            let start = try run(["--listen", "127.0.0.1:0"] + arguments, environment: environment)
            let check = try run(["--check", "--listen", "127.0.0.1:0"] + arguments, environment: environment)
            XCTAssertEqual(start.status, 2, "\(what): the start fails: \(start.stderr)")
            XCTAssertEqual(check.status, 2, "\(what): \(check.stdout)")
            XCTAssertEqual(check.stdout, "", what)
            XCTAssertEqual(check.stderr.split(separator: "\n").count, 1, "\(what): one line: \(check.stderr)")
            XCTAssertEqual(check.stderr, start.stderr, what)
        }
    }

    /// A check never binds: a port already taken (the running service's, say) is no error for it,
    /// where a start on it fails.
    func testABusyPortIsNoErrorForACheck() throws {
        let busy = try RecordingUpstream()
        defer { busy.stop() }
        let start = try run(provider + ["--listen", busy.address, "--upstream", "http://127.0.0.1:9"])
        XCTAssertEqual(start.status, 2, "a start on a busy port fails: \(start.stdout)")
        let check = try run(provider + ["--check", "--listen", busy.address, "--admin-listen", busy.address, "--upstream", "http://127.0.0.1:9"])
        XCTAssertEqual(check.status, 0, check.stderr)
        XCTAssertTrue(check.stdout.contains("would serve on \(busy.address)"), check.stdout)
    }

    /// Neither the upstream nor the provider is dialled (a start dials the upstream at once, to
    /// warm its connection).
    func testACheckDialsNeitherTheUpstreamNorTheProvider() throws {
        let upstream = try RecordingUpstream(), tokens = try RecordingUpstream()
        defer { upstream.stop(); tokens.stop() }
        let flags = ["--upstream", "http://\(upstream.address)", "--upstream-protocol", "http1.1",
                     "--provider-url", "http://\(tokens.address)/t/{id}"]
        let check = try run(["--check"] + flags)
        XCTAssertEqual(check.status, 0, check.stderr)
        usleep(300_000)
        XCTAssertEqual(upstream.received.count, 0, "the upstream was dialled")
        XCTAssertEqual(tokens.received.count, 0, "the provider was dialled")
        let sidecar = try SidecarProcess(flags)
        defer { sidecar.stop() }
        let deadline = Date().addingTimeInterval(5)
        while upstream.received.isEmpty && Date() < deadline { usleep(20_000) }
        XCTAssertEqual(upstream.received.count, 1, "a start dials the upstream: the test can see a dial")
    }
}
