@testable import FleetTokenProxy
import XCTest

final class ConfigurationTests: XCTestCase {
    private func configuration() throws -> Configuration {
        try Configuration(upstream: UpstreamURL.parse("http://127.0.0.1:9"),
                          providerURL: ProviderURLTemplate.parse("http://127.0.0.1:9/t/{id}"))
    }

    func testDefaultBufferCapIs256MiB() throws {
        let config = try configuration()
        XCTAssertEqual(config.limits.maxBufferedBytes, 268_435_456)
        XCTAssertNoThrow(try config.validate())
    }

    func testBufferCapBelow64KiBIsRefused() throws {
        var config = try configuration()
        config.limits.maxBufferedBytes = 64 * 1024
        XCTAssertNoThrow(try config.validate())
        config.limits.maxBufferedBytes = 64 * 1024 - 1
        XCTAssertThrowsError(try config.validate()) { error in
            let message = (error as? ConfigError)?.message ?? ""
            XCTAssertTrue(message.contains("--max-buffered-bytes") && message.contains("65536"), message)
        }
    }

    func testUpstreamIdleTimeoutDefaultsToTenMinutesAndMustBePositive() throws {
        var config = try configuration()
        XCTAssertEqual(config.upstreamIdleTimeout, 600)
        config.upstreamIdleTimeout = 0
        XCTAssertThrowsError(try config.validate()) { error in
            XCTAssertTrue((error as? ConfigError)?.message.contains("--upstream-idle-timeout") ?? false)
        }
        config.upstreamIdleTimeout = .nan
        XCTAssertThrowsError(try config.validate())
        config.upstreamIdleTimeout = 0.5
        XCTAssertNoThrow(try config.validate())
    }
}
