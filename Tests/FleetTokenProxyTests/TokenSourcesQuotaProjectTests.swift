@testable import FleetTokenProxy
import Logging
import XCTest

/// Which forwarded calls must carry `x-goog-user-project` (docs/CONTRACT.md §4a): those whose
/// token is the ADC access token itself (`--signer adc`), with the credentials' quota project;
/// never a minted JWT's or a provider's.
final class TokenSourcesQuotaProjectTests: XCTestCase {
    func adcSigner(_ credentials: ApplicationDefaultCredentials, loop: EventLoop) throws -> AccessTokenSigner {
        let clock = ManualClock()
        let source = try ADCTokenSource(
            credentials: credentials, tokenEndpoint: try GoogleEndpoint.parse("http://127.0.0.1:1/token", what: "t"), loop: loop, tls: nil,
            timeout: 1, backoff: BackoffPolicy(), minValidity: 60, clock: clock, logger: Logger(label: "test"))
        return AccessTokenSigner(source: source, clock: clock)
    }

    func testOnlyTheTypesTheAdcTokenServesCarryItsQuotaProject() throws {
        let loop = try EventLoop()
        let billed = try adcSigner(.metadataServer(host: "127.0.0.1:1", quotaProject: "env-project"), loop: loop)
        let other = FakeFetcher()
        let sources = TokenSources { type -> TokenFetcher in type == .vehicle ? billed : other }
        XCTAssertEqual(sources.quotaProject(for: .vehicle), "env-project")
        XCTAssertNil(sources.quotaProject(for: .trip), "a provider's or signer's token carries none")
        let unbilled = try adcSigner(.metadataServer(host: "127.0.0.1:1"), loop: loop)
        XCTAssertNil(TokenSources { _ in unbilled }.quotaProject(for: .vehicle), "no quota project, no header")
    }
}
