import XCTest
@testable import FleetTokenProxy

final class ListenAddressTests: XCTestCase {
    private func parseError(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> String {
        do {
            let address = try ListenAddress.parse(text)
            XCTFail("\(text) parsed as \(address)", file: file, line: line)
            return ""
        } catch {
            return error.message
        }
    }

    func testParsesIPv4HostAndPort() throws {
        XCTAssertEqual(try ListenAddress.parse("127.0.0.1:4180"), .inet(host: "127.0.0.1", port: 4180))
        XCTAssertEqual(try ListenAddress.parse("0.0.0.0:80"), .inet(host: "0.0.0.0", port: 80))
    }

    func testLocalhostMeans127001() throws {
        XCTAssertEqual(try ListenAddress.parse("localhost:4180"), .inet(host: "127.0.0.1", port: 4180))
    }

    func testParsesBracketedIPv6() throws {
        XCTAssertEqual(try ListenAddress.parse("[::1]:4180"), .inet(host: "::1", port: 4180))
        XCTAssertEqual(try ListenAddress.parse("[::]:8080"), .inet(host: "::", port: 8080))
        XCTAssertEqual(try ListenAddress.parse("[fd00:1:2::3]:1"), .inet(host: "fd00:1:2::3", port: 1))
    }

    func testIPv6IsStoredInCanonicalForm() throws {
        XCTAssertEqual(try ListenAddress.parse("[0:0:0:0:0:0:0:1]:4180"), .inet(host: "::1", port: 4180))
        XCTAssertEqual(try ListenAddress.parse("[FD00::ABCD]:4180"), .inet(host: "fd00::abcd", port: 4180))
    }

    func testParsesUnixSocketPath() throws {
        XCTAssertEqual(try ListenAddress.parse("unix:/run/fleet-token-proxy.sock"), .unix(path: "/run/fleet-token-proxy.sock"))
    }

    func testPortZeroAsksForAnEphemeralPort() throws {
        XCTAssertEqual(try ListenAddress.parse("127.0.0.1:0"), .inet(host: "127.0.0.1", port: 0))
        XCTAssertEqual(try ListenAddress.parse("127.0.0.1:65535"), .inet(host: "127.0.0.1", port: 65535))
    }

    func testPortOutOfRangeOrNotANumberIsRefused() {
        for text in ["127.0.0.1:65536", "127.0.0.1:99999", "127.0.0.1:", "127.0.0.1:-1", "127.0.0.1:+80",
                     "127.0.0.1:http", "127.0.0.1: 80", "127.0.0.1:123456", "[::1]:"] {
            XCTAssertTrue(parseError(text).contains("port"), text)
        }
    }

    func testMissingPortIsRefused() {
        XCTAssertTrue(parseError("127.0.0.1").contains("no port"))
        XCTAssertTrue(parseError("[::1]").contains("no port"))
        XCTAssertTrue(parseError("").contains("no port"))
    }

    func testBareIPv6WithoutBracketsIsRefused() {
        XCTAssertTrue(parseError("::1:4180").contains("brackets"))
    }

    func testHostNamesOtherThanLocalhostAreRefused() {
        XCTAssertTrue(parseError("example.com:4180").contains("numeric IP address"))
        XCTAssertTrue(parseError("127.1:4180").contains("numeric IP address"))
        XCTAssertTrue(parseError("256.0.0.1:4180").contains("numeric IP address"))
        XCTAssertTrue(parseError(":4180").contains("no host"))
    }

    func testMalformedIPv6IsRefused() {
        XCTAssertTrue(parseError("[::g]:4180").contains("IPv6"))
        XCTAssertTrue(parseError("[::1:4180").contains("']'"))
        XCTAssertTrue(parseError("[127.0.0.1]:4180").contains("IPv6"))
        XCTAssertTrue(parseError("[fe80::1%eth0]:4180").contains("IPv6"))
    }

    func testUnixSocketPathMustBeAbsolute() {
        XCTAssertTrue(parseError("unix:run/x.sock").contains("absolute"))
        XCTAssertTrue(parseError("unix:").contains("absolute"))
    }

    func testUnixSocketPathMustNameAFile() {
        XCTAssertTrue(parseError("unix:/run/").contains("directory"))
    }

    func testUnixSocketPathLongerThanSunPathIsRefused() throws {
        let longest = "/" + String(repeating: "a", count: ListenAddress.maxUnixPathBytes - 1)
        XCTAssertEqual(try ListenAddress.parse("unix:" + longest), .unix(path: longest))
        XCTAssertTrue(parseError("unix:" + longest + "a").contains("longer than"))
    }

    func testUnixSocketPathWithNULIsRefused() {
        XCTAssertTrue(parseError("unix:/run/a\u{0}b").contains("NUL"))
    }

    func testWildcardAndPrivateAddressesAreNotLoopback() throws {
        XCTAssertFalse(try ListenAddress.parse("0.0.0.0:4180").isLoopback)
        XCTAssertFalse(try ListenAddress.parse("10.1.2.3:4180").isLoopback)
        XCTAssertFalse(try ListenAddress.parse("[::]:4180").isLoopback)
        XCTAssertFalse(try ListenAddress.parse("[fd00::1]:4180").isLoopback)
        XCTAssertFalse(try ListenAddress.parse("[::ffff:10.0.0.1]:4180").isLoopback)
        XCTAssertFalse(try ListenAddress.parse("128.0.0.1:4180").isLoopback)
    }

    func testLoopbackAddressesAndUnixSocketsAreLoopback() throws {
        XCTAssertTrue(try ListenAddress.parse("127.0.0.1:4180").isLoopback)
        XCTAssertTrue(try ListenAddress.parse("127.8.9.10:4180").isLoopback)
        XCTAssertTrue(try ListenAddress.parse("localhost:4180").isLoopback)
        XCTAssertTrue(try ListenAddress.parse("[::1]:4180").isLoopback)
        XCTAssertTrue(try ListenAddress.parse("[::ffff:127.0.0.1]:4180").isLoopback)
        XCTAssertTrue(try ListenAddress.parse("unix:/run/x.sock").isLoopback)
    }

    func testHandBuiltAddressWithANameIsNotLoopback() {
        XCTAssertFalse(ListenAddress.inet(host: "example.com", port: 1).isLoopback)
    }

    func testDescriptionIsWhatParseAccepts() throws {
        for text in ["127.0.0.1:4180", "[::1]:4180", "unix:/run/x.sock", "0.0.0.0:0"] {
            let address = try ListenAddress.parse(text)
            XCTAssertEqual(address.description, text)
            XCTAssertEqual(try ListenAddress.parse(address.description), address)
        }
    }

    func testErrorMessagesDoNotEchoHugeInput() {
        let message = parseError(String(repeating: "9", count: 5000) + ":1")
        XCTAssertLessThan(message.count, 200, message)
    }
}
