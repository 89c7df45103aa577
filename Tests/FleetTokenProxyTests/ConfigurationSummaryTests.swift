@testable import FleetTokenProxy
import XCTest

/// The line `serve --check` prints: listeners, upstream, and each token type's source.
final class ConfigurationSummaryTests: XCTestCase {
    func testProviderOnlyIsEveryTypeFromTheProviderWithItsQueryHidden() throws {
        var config = try Configuration(upstream: UpstreamURL.parse("https://fleetengine.googleapis.com"),
                                       providerURL: ProviderURLTemplate.parse("https://auth.internal/t/{type}/{id}?key=s3cr3t"))
        config.adminListen = try ListenAddress.parse("127.0.0.1:4181")
        config.upstreamProtocol = .h2
        XCTAssertEqual(try config.summary(), "configuration ok: would serve on 127.0.0.1:4180 (admin 127.0.0.1:4181), "
            + "forwarding to https://fleetengine.googleapis.com (h2); tokens: every type from the provider https://auth.internal/t/{type}/{id}?key=…")
    }

    func testSignersAndTheProviderAreListedByTheTypesEachCovers() throws {
        var config = try Configuration(upstream: UpstreamURL.parse("http://127.0.0.1:9"),
                                       providerURL: ProviderURLTemplate.parse("http://127.0.0.1:9/t/{id}"))
        config.listen = try ListenAddress.parse("unix:/run/fleet-token-proxy/proxy.sock")
        config.signers = [try SignerFlag.parse("fleet,vehicle=iam:signer@p.iam.gserviceaccount.com"),
                          try SignerFlag.parse("task=key-file:/etc/fleet-token-proxy/key.json")]
        XCTAssertEqual(try config.summary(), "configuration ok: would serve on unix:/run/fleet-token-proxy/proxy.sock, "
            + "forwarding to http://127.0.0.1:9 (auto); tokens: vehicle, fleet from iam:signer@p.iam.gserviceaccount.com; "
            + "trip, delivery_vehicle, tracking from the provider http://127.0.0.1:9/t/{id}; task from key-file:/etc/fleet-token-proxy/key.json")
    }

    func testACatchAllSignerWithoutAProviderIsEveryType() throws {
        var config = try Configuration(upstream: UpstreamURL.parse("http://127.0.0.1:9"), providerURL: nil)
        config.signers = [try SignerFlag.parse("adc")]
        XCTAssertTrue(try config.summary().hasSuffix("tokens: every type from adc"))
    }
}
