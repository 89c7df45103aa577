@testable import FleetTokenProxy
import XCTest

final class EnvironmentArgumentsTests: XCTestCase {
    let flags: [EnvironmentArguments.Flag] = [
        .init("provider-url"), .init("listen"), .init("lazy-refresh", takesValue: false),
        .init("provider-header", repeatable: true),
    ]

    func testVariableNameIsPrefixedUppercaseWithUnderscores() {
        XCTAssertEqual(EnvironmentArguments.Flag("provider-url").variable, "FLEET_TOKEN_PROXY_PROVIDER_URL")
    }

    func testVariableBecomesAFlagWithItsValue() throws {
        let args = try EnvironmentArguments.merge(arguments: ["serve"], environment: ["FLEET_TOKEN_PROXY_PROVIDER_URL": "http://x/{id}"], flags: flags)
        XCTAssertEqual(args, ["serve", "--provider-url", "http://x/{id}"])
    }

    func testCommandLineWinsOverTheVariable() throws {
        let args = try EnvironmentArguments.merge(arguments: ["serve", "--listen=127.0.0.1:1"], environment: ["FLEET_TOKEN_PROXY_LISTEN": "127.0.0.1:2"], flags: flags)
        XCTAssertEqual(args, ["serve", "--listen=127.0.0.1:1"])
    }

    func testSwitchVariableAcceptsTrueAndFalse() throws {
        XCTAssertEqual(try EnvironmentArguments.merge(arguments: [], environment: ["FLEET_TOKEN_PROXY_LAZY_REFRESH": "true"], flags: flags), ["--lazy-refresh"])
        XCTAssertEqual(try EnvironmentArguments.merge(arguments: [], environment: ["FLEET_TOKEN_PROXY_LAZY_REFRESH": "0"], flags: flags), [])
        XCTAssertThrowsError(try EnvironmentArguments.merge(arguments: [], environment: ["FLEET_TOKEN_PROXY_LAZY_REFRESH": "maybe"], flags: flags))
    }

    func testRepeatableVariableHoldsOneValueALine() throws {
        let args = try EnvironmentArguments.merge(arguments: [], environment: ["FLEET_TOKEN_PROXY_PROVIDER_HEADER": "A: 1\nB: 2"], flags: flags)
        XCTAssertEqual(args, ["--provider-header", "A: 1", "--provider-header", "B: 2"])
    }
}
