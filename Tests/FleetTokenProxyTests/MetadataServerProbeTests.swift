import XCTest
@testable import FleetTokenProxy

/// What the start-up probe takes for Google's metadata server: a 200 that says
/// `Metadata-Flavor: Google`, as another cloud's service at the same address does not.
final class MetadataServerProbeTests: XCTestCase {
    func says(_ text: String) -> Bool { MetadataServerProbe.says(Array(text.utf8)) }

    func testOnlyA200NamingGoogleIsTheMetadataServer() {
        XCTAssertTrue(says("HTTP/1.1 200 OK\r\nMetadata-Flavor: Google\r\nContent-Type: application/text\r\n\r\ninstance/"))
        XCTAssertTrue(says("HTTP/1.1 200 OK\r\nmetadata-flavor:Google\r\n\r\n"))
        XCTAssertFalse(says("HTTP/1.1 200 OK\r\nServer: EC2ws\r\n\r\n"), "another cloud's metadata service")
        XCTAssertFalse(says("HTTP/1.1 404 Not Found\r\nMetadata-Flavor: Google\r\n\r\n"))
        XCTAssertFalse(says("HTTP/1.1 200 OK\r\nMetadata-Flavor: Google"), "a head cut short")
        XCTAssertFalse(says("HTTP/1.1 200 OK\r\nX-Metadata-Flavor: Google\r\n\r\n"))
        XCTAssertFalse(says(""))
    }

    func testATokenAnswerIsGooglesOnlyWhenItSaysMetadataFlavorGoogle() {
        func answer(_ fields: [String: String]) -> EndpointClient.Answer { EndpointClient.Answer(status: 200, body: [], fields: fields) }
        XCTAssertTrue(MetadataServerExchange.saysGoogle(answer(["Metadata-Flavor": "Google"])))
        XCTAssertFalse(MetadataServerExchange.saysGoogle(answer([:])), "no field")
        XCTAssertFalse(MetadataServerExchange.saysGoogle(answer(["Metadata-Flavor": "Amazon"])))
    }
}
