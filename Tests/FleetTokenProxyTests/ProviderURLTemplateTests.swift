import XCTest
@testable import FleetTokenProxy

final class ProviderURLTemplateTests: XCTestCase {
    private func parseError(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> String {
        do {
            let template = try ProviderURLTemplate.parse(text)
            XCTFail("\(text) parsed as \(template)", file: file, line: line)
            return ""
        } catch {
            return error.message
        }
    }

    private func vehicle(_ id: String, provider: String = "my-project") -> EntityKey {
        EntityKey(provider: provider, type: .vehicle, id: id)
    }

    func testSpecExampleSubstitutesTypeAndId() throws {
        let template = try ProviderURLTemplate.parse("https://auth.internal/fleet/token/{type}/{id}")
        XCTAssertEqual(template.scheme, .https)
        XCTAssertEqual(template.host, "auth.internal")
        XCTAssertEqual(template.port, 443)
        XCTAssertEqual(template.hostHeader, "auth.internal")
        XCTAssertEqual(template.target(for: vehicle("v1")), "/fleet/token/vehicle/v1")
        XCTAssertEqual(
            template.target(for: EntityKey(provider: "p", type: .deliveryVehicle, id: "dv-1")),
            "/fleet/token/delivery_vehicle/dv-1")
    }

    func testReservedCharactersInIdAreEncodedSoTheyCannotChangeTheURL() throws {
        let template = try ProviderURLTemplate.parse("https://auth.internal/token/{id}")
        XCTAssertEqual(template.target(for: vehicle("a/b?c#d")), "/token/a%2Fb%3Fc%23d")
    }

    func testFleetWildcardIdIsEncoded() throws {
        let template = try ProviderURLTemplate.parse("https://auth.internal/token/{type}/{id}")
        XCTAssertEqual(template.target(for: .fleet(provider: "p")), "/token/fleet/%2A")
    }

    func testUnreservedCharactersAreLeftAlone() throws {
        let template = try ProviderURLTemplate.parse("https://auth.internal/t/{id}")
        XCTAssertEqual(template.target(for: vehicle("AZaz09-._~")), "/t/AZaz09-._~")
    }

    func testSpacesPlusAndNonASCIIAreEncoded() throws {
        let template = try ProviderURLTemplate.parse("https://auth.internal/t/{id}")
        XCTAssertEqual(template.target(for: vehicle("v one+€")), "/t/v%20one%2B%E2%82%AC")
        XCTAssertEqual(template.target(for: vehicle("%41")), "/t/%2541")
    }

    func testIdInQueryCannotAddParameters() throws {
        let template = try ProviderURLTemplate.parse("https://auth.internal/token?type={type}&id={id}")
        XCTAssertEqual(template.target(for: vehicle("x&admin=1")), "/token?type=vehicle&id=x%26admin%3D1")
    }

    func testDotOnlyIdsAreEncodedSoTheyAreNotDotSegments() throws {
        let template = try ProviderURLTemplate.parse("https://auth.internal/t/{id}/x")
        XCTAssertEqual(template.target(for: vehicle("..")), "/t/%2E%2E/x")
        XCTAssertEqual(template.target(for: vehicle(".")), "/t/%2E/x")
        XCTAssertEqual(template.target(for: vehicle("...")), "/t/.../x")
    }

    func testProviderPlaceholderIsEncoded() throws {
        let template = try ProviderURLTemplate.parse("http://127.0.0.1:9000/{provider}/{type}/{id}")
        XCTAssertEqual(template.target(for: vehicle("v1", provider: "my project")), "/my%20project/vehicle/v1")
        XCTAssertEqual(template.hostHeader, "127.0.0.1:9000")
        XCTAssertEqual(template.port, 9000)
        XCTAssertEqual(template.scheme, .http)
    }

    func testPlaceholderMayAppearMoreThanOnceAndInsideASegment() throws {
        let template = try ProviderURLTemplate.parse("https://a.b/x-{id}/{id}.json")
        XCTAssertEqual(template.target(for: vehicle("v/1")), "/x-v%2F1/v%2F1.json")
    }

    func testLiteralEscapesInTheTemplateAreKept() throws {
        let template = try ProviderURLTemplate.parse("https://a.b/fleet%20tokens/{id}?x=%2F")
        XCTAssertEqual(template.target(for: vehicle("v")), "/fleet%20tokens/v?x=%2F")
    }

    func testTemplateWithQueryButNoPathGetsRootPath() throws {
        let template = try ProviderURLTemplate.parse("https://a.b?id={id}")
        XCTAssertEqual(template.target(for: vehicle("v")), "/?id=v")
    }

    func testIPv6HostIsBracketedInHostHeader() throws {
        let template = try ProviderURLTemplate.parse("http://[::1]:8081/t/{id}")
        XCTAssertEqual(template.host, "::1")
        XCTAssertEqual(template.hostHeader, "[::1]:8081")
    }

    func testDescriptionIsTheTemplateAsGivenWhenItsQueryHasOnlyPlaceholders() throws {
        let text = "https://Auth.Internal:8443/fleet/token/{type}/{id}?p={provider}"
        XCTAssertEqual(try ProviderURLTemplate.parse(text).description, text)
    }

    func testDescriptionHidesQueryValues() throws {
        let template = try ProviderURLTemplate.parse("https://auth.internal/t/{type}/{id}?key=s3cr3t&id={id}&flag&empty=")
        XCTAssertEqual(template.description, "https://auth.internal/t/{type}/{id}?key=\u{2026}&id={id}&\u{2026}&empty=")
    }

    func testParseErrorsHideQueryValues() {
        for text in ["https://auth.internal/t/{type}?key=s3cr3t", "https://auth.internal/t/{id}?key=s3cr3t#x",
                     "ftp://auth.internal/t/{id}?key=s3cr3t", "https://auth.internal/t/{id}?key=s3cr3t%zz"] {
            let message = parseError(text)
            XCTAssertFalse(message.isEmpty, text)
            XCTAssertFalse(message.contains("s3cr3t"), message)
        }
    }

    func testUnknownPlaceholderIsRefused() {
        let message = parseError("https://auth.internal/token/{vehicle}/{id}")
        XCTAssertTrue(message.contains("{vehicle}"), message)
        XCTAssertTrue(message.contains("unknown placeholder"), message)
        XCTAssertTrue(parseError("https://auth.internal/token/{ID}").contains("unknown placeholder"))
        XCTAssertTrue(parseError("https://auth.internal/token/{}/{id}").contains("unknown placeholder"))
    }

    func testPlaceholderInHostIsRefused() {
        XCTAssertTrue(parseError("https://{provider}.auth.internal/token/{id}").contains("not in the host"))
        XCTAssertTrue(parseError("https://auth.internal:{id}/token").contains("not in the host"))
    }

    func testTemplateWithoutIdPlaceholderIsRefused() {
        XCTAssertTrue(parseError("https://auth.internal/token/{type}").contains("no {id}"))
    }

    func testUnbalancedBracesAreRefused() {
        XCTAssertTrue(parseError("https://auth.internal/token/{id").contains("never closed"))
        XCTAssertTrue(parseError("https://auth.internal/token/id}/{id}").contains("without a '{'"))
    }

    func testFragmentIsRefused() {
        XCTAssertTrue(parseError("https://auth.internal/token/{id}#x").contains("fragment"))
    }

    func testUserInfoIsRefusedWithoutEchoingIt() {
        let message = parseError("https://svc:hunter2@auth.internal/token/{id}")
        XCTAssertTrue(message.contains("user name or password"), message)
        XCTAssertFalse(message.contains("hunter2"), message)
    }

    func testCharactersThatBreakARequestLineAreRefused() {
        for text in ["https://a.b/to ken/{id}", "https://a.b/t\"/{id}", "https://a.b/€/{id}", "https://a.b/t\n/{id}"] {
            XCTAssertTrue(parseError(text).contains("percent-encoded"), text)
        }
        XCTAssertTrue(parseError("https://a.b/t%2/{id}").contains("two hex digits"))
    }

    func testOtherSchemesAreRefused() {
        XCTAssertTrue(parseError("ftp://a.b/{id}").contains("http:// or https://"))
    }
}
