import XCTest
@testable import FleetTokenProxy

final class UpstreamURLTests: XCTestCase {
    private func parseError(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> String {
        do {
            let url = try UpstreamURL.parse(text)
            XCTFail("\(text) parsed as \(url)", file: file, line: line)
            return ""
        } catch {
            return error.message
        }
    }

    func testDefaultUpstreamParsesWithPort443() throws {
        let url = try UpstreamURL.parse("https://fleetengine.googleapis.com")
        XCTAssertEqual(url.scheme, .https)
        XCTAssertEqual(url.host, "fleetengine.googleapis.com")
        XCTAssertEqual(url.port, 443)
        XCTAssertEqual(url.hostHeader, "fleetengine.googleapis.com")
        XCTAssertEqual(url.description, "https://fleetengine.googleapis.com")
    }

    func testHTTPDefaultsToPort80() throws {
        let url = try UpstreamURL.parse("http://stand-in.local")
        XCTAssertEqual(url.scheme, .http)
        XCTAssertEqual(url.port, 80)
        XCTAssertEqual(url.hostHeader, "stand-in.local")
    }

    func testExplicitPortIsKeptInHostHeader() throws {
        let url = try UpstreamURL.parse("https://example.com:8443/")
        XCTAssertEqual(url.port, 8443)
        XCTAssertEqual(url.hostHeader, "example.com:8443")
        XCTAssertEqual(url.description, "https://example.com:8443")
    }

    func testExplicitDefaultPortIsLeftOutOfHostHeader() throws {
        XCTAssertEqual(try UpstreamURL.parse("https://example.com:443").hostHeader, "example.com")
        XCTAssertEqual(try UpstreamURL.parse("http://example.com:80").hostHeader, "example.com")
    }

    func testIPv6HostIsStoredWithoutBracketsAndSentWithThem() throws {
        let url = try UpstreamURL.parse("http://[::1]:8080")
        XCTAssertEqual(url.host, "::1")
        XCTAssertEqual(url.port, 8080)
        XCTAssertEqual(url.hostHeader, "[::1]:8080")
        XCTAssertEqual(try UpstreamURL.parse("https://[::1]").hostHeader, "[::1]")
    }

    func testIPv4Host() throws {
        let url = try UpstreamURL.parse("http://127.0.0.1:9000/")
        XCTAssertEqual(url.host, "127.0.0.1")
        XCTAssertEqual(url.hostHeader, "127.0.0.1:9000")
    }

    func testSchemeAndHostAreCaseInsensitive() throws {
        let url = try UpstreamURL.parse("HTTPS://FleetEngine.GoogleAPIs.com")
        XCTAssertEqual(url.scheme, .https)
        XCTAssertEqual(url.host, "fleetengine.googleapis.com")
    }

    func testUserInfoIsRefusedWithoutEchoingIt() {
        let message = parseError("https://user:s3cret@example.com")
        XCTAssertTrue(message.contains("user name or password"), message)
        XCTAssertFalse(message.contains("s3cret"), message)
    }

    func testQueryIsRefused() {
        XCTAssertTrue(parseError("https://example.com?key=1").contains("query"))
        XCTAssertTrue(parseError("https://example.com/?key=1").contains("query"))
    }

    func testFragmentIsRefused() {
        XCTAssertTrue(parseError("https://example.com/#top").contains("fragment"))
    }

    func testNonRootPathIsRefused() {
        XCTAssertTrue(parseError("https://example.com/v1").contains("path"))
        XCTAssertTrue(parseError("https://example.com//").contains("path"))
    }

    func testOtherSchemesAreRefused() {
        for text in ["ftp://example.com", "grpc://example.com", "example.com", "https:/example.com", "//example.com", ""] {
            XCTAssertTrue(parseError(text).contains("http:// or https://"), text)
        }
    }

    func testBadHostsAreRefused() {
        XCTAssertTrue(parseError("https://").contains("no host"))
        XCTAssertTrue(parseError("https://:443").contains("no host"))
        XCTAssertTrue(parseError("https://exa mple.com").contains("not a valid host name"))
        XCTAssertTrue(parseError("https://exa%6Dple.com").contains("not a valid host name"))
        XCTAssertTrue(parseError("https://a..b").contains("empty label"))
        XCTAssertTrue(parseError("https://.example.com").contains("empty label"))
        XCTAssertTrue(parseError("https://1..2.3").contains("empty label"))
        XCTAssertTrue(parseError("https://a..b_").contains("empty label"))
        // A bad character is reported before an empty label, wherever each is.
        XCTAssertTrue(parseError("https://a..b!").contains("not a valid host name"))
        XCTAssertTrue(parseError("https://10.1").contains("IPv4"))
        XCTAssertTrue(parseError("https://[::1").contains("']'"))
        XCTAssertTrue(parseError("https://[nope]").contains("IPv6"))
        XCTAssertTrue(parseError("https://::1").contains("brackets"))
    }

    func testBadPortsAreRefused() {
        for text in ["https://example.com:0", "https://example.com:65536", "https://example.com:", "https://example.com:x"] {
            XCTAssertTrue(parseError(text).contains("port"), text)
        }
    }
}
