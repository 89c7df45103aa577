import Foundation
import XCTest

/// docs/CONTRACT.md §6: a bad flag, an unreadable file or a non-loopback listener stops start-up with one
/// clear line on stderr and exit status 2; every flag also reads from the environment.
final class StartupTests: XCTestCase {
    func serve(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, stderr: String) {
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("FLEET_TOKEN_PROXY_") }
        env.merge(environment) { $1 }
        let result = try runCommand(SidecarProcess.binary.path, ["serve"] + arguments, environment: env)
        return (result.status, result.stderr)
    }

    let provider = ["--provider-url", "http://127.0.0.1:9/token/{type}/{id}"]

    func assertRefused(_ arguments: [String], mentions word: String, environment: [String: String] = [:],
                       file: StaticString = #filePath, line: UInt = #line) throws {
        let result = try serve(arguments, environment: environment)
        XCTAssertEqual(result.status, 2, result.stderr, file: file, line: line)
        let lines = result.stderr.split(separator: "\n")
        XCTAssertEqual(lines.count, 1, "one line: \(result.stderr)", file: file, line: line)
        XCTAssertTrue(result.stderr.contains(word), "\(word) in \(result.stderr)", file: file, line: line)
    }

    func testNonLoopbackListenerIsRefusedWithoutOptIn() throws {
        try assertRefused(["--listen", "0.0.0.0:4180"] + provider, mentions: "--allow-non-loopback")
    }

    func testEveryStandInRefusesANonLoopbackListener() throws {
        for standIn in ["provider", "fleet-engine", "google"] {
            // Under timeout(1): a stand-in that wrongly starts fails the test instead of hanging it.
            let result = try runCommand("/usr/bin/timeout", ["10", SidecarProcess.binary.path, "stand-in", standIn, "--listen", "0.0.0.0:0"])
            XCTAssertNotEqual(result.status, 0, standIn)
            XCTAssertTrue(result.stderr.contains("stand-in listens on loopback only"), "\(standIn): \(result.stderr)")
        }
    }

    func testMissingProviderURLIsRefused() throws {
        try assertRefused([], mentions: "--provider-url")
    }

    func testUnknownFlagIsRefused() throws {
        try assertRefused(provider + ["--no-such-flag"], mentions: "no-such-flag")
    }

    func testBadNumberIsRefused() throws {
        try assertRefused(provider + ["--refresh-margin", "soon"], mentions: "refresh-margin")
    }

    func testUnreadableCAFileIsRefused() throws {
        try assertRefused(provider + ["--upstream-ca-file", "/nonexistent/ca.pem"], mentions: "/nonexistent/ca.pem")
    }

    func testUnknownPlaceholderInProviderURLIsRefused() throws {
        try assertRefused(["--provider-url", "http://127.0.0.1:9/token/{vehicle}"], mentions: "{vehicle}")
    }

    func testBadHeaderIsRefusedWithoutEchoingItsValue() throws {
        let result = try serve(provider + ["--provider-header", "No colon secret-value-123"])
        XCTAssertEqual(result.status, 2)
        XCTAssertFalse(result.stderr.contains("secret-value-123"), result.stderr)
    }

    func testEnvironmentVariablesConfigureServe() throws {
        let standIns = try StandInHost()
        defer { standIns.stop() }
        let sidecar = try SidecarProcess([], environment: [
            "FLEET_TOKEN_PROXY_PROVIDER_URL": standIns.providerTemplate,
            "FLEET_TOKEN_PROXY_UPSTREAM": "http://\(standIns.fleetEngineAddress)",
            "FLEET_TOKEN_PROXY_LISTEN": "127.0.0.1:0",
            "FLEET_TOKEN_PROXY_PROVIDER_HEADER": "X-A: 1\nX-B: 2",
        ])
        defer { sidecar.stop() }
        let result = try curl(["-o", "/dev/null", "-w", "%{http_code}", sidecar.baseURL + "/v1/providers/p/trips/t1"])
        XCTAssertEqual(result.stdout, "200")
    }

    func testEnvironmentNonLoopbackListenerIsRefusedToo() throws {
        try assertRefused(provider, mentions: "--allow-non-loopback", environment: ["FLEET_TOKEN_PROXY_LISTEN": "0.0.0.0:4180"])
    }

    func testMaxBufferedBytesBelowTheMinimumIsRefused() throws {
        try assertRefused(provider + ["--max-buffered-bytes", "65535"], mentions: "--max-buffered-bytes")
        try assertRefused(provider + ["--max-buffered-bytes", "lots"], mentions: "max-buffered-bytes")
        try assertRefused(provider, mentions: "--max-buffered-bytes", environment: ["FLEET_TOKEN_PROXY_MAX_BUFFERED_BYTES": "1024"])
    }

    func testMaxBufferedBytesSetsTheBudgetShownInMetrics() throws {
        let sidecar = try SidecarProcess([
            "--provider-url", "http://127.0.0.1:9/t/{id}", "--upstream", "http://127.0.0.1:9",
            "--admin-listen", "127.0.0.1:0",
        ], environment: ["FLEET_TOKEN_PROXY_MAX_BUFFERED_BYTES": "65536"])
        defer { sidecar.stop() }
        let admin = try XCTUnwrap(sidecar.adminAddress, sidecar.log)
        let page = MetricsPage(text: try httpGet("http://\(admin)/metrics").body)
        XCTAssertEqual(page.value("fleet_token_proxy_buffered_bytes_limit"), 65536, page.text)
        XCTAssertEqual(page.value("fleet_token_proxy_buffered_bytes"), 0, page.text)
    }

    // MARK: The provider URL's query may hold a secret

    func testProviderURLQueryValuesNeverReachTheLog() throws {
        let sidecar = try SidecarProcess([
            "--provider-url", "http://127.0.0.1:1/t/{type}/{id}?key=s3cr3t&entity={id}",
            "--upstream", "http://127.0.0.1:9", "--log-level", "trace", "--access-log",
        ])
        // A call makes the sidecar fetch (and fail to fetch) a token, so fetch errors are logged too.
        let answer = try curl(["-s", "-o", "/dev/null", "-w", "%{http_code}", sidecar.baseURL + "/v1/providers/p/vehicles/v1"])
        XCTAssertEqual(answer.stdout, "503")
        XCTAssertEqual(sidecar.stop(), 0)
        XCTAssertFalse(sidecar.log.contains("s3cr3t"), sidecar.log)
        // What an operator needs to recognise the setting is still there.
        XCTAssertTrue(sidecar.log.contains("http://127.0.0.1:1/t/{type}/{id}?key="), sidecar.log)
        XCTAssertTrue(sidecar.log.contains("entity={id}"), sidecar.log)
    }

    func testBadProviderURLIsRefusedWithoutEchoingItsQuery() throws {
        for url in ["http://127.0.0.1:1/t/{type}?key=s3cr3t", "http://127.0.0.1:1/t/{id}?key=s3cr3t&x={bad}",
                    "htp://127.0.0.1:1/t/{id}?key=s3cr3t", "http://127.0.0.1:1/t/{id}?key=s3cr3t#frag",
                    "http://127.0.0.1:1/t/{id}?key=s3cr3t|"] {
            let result = try serve(["--provider-url", url])
            XCTAssertEqual(result.status, 2, result.stderr)
            XCTAssertFalse(result.stderr.isEmpty)
            XCTAssertFalse(result.stderr.contains("s3cr3t"), result.stderr)
        }
    }
}
