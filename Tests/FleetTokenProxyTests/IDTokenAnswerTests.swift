import XCTest
@testable import FleetTokenProxy

/// A Google-signed ID token as the metadata server (text) and the token endpoint (JSON) answer it.
final class IDTokenAnswerTests: XCTestCase {
    func jwt(exp: Int) -> String {
        Base64URL.encode(Array(#"{"alg":"RS256"}"#.utf8)) + "." + Base64URL.encode(Array(#"{"aud":"a","exp":\#(exp)}"#.utf8)) + ".c2ln"
    }

    func parse(_ text: String) -> Result<AccessToken, ProxyFailure> {
        IDTokenAnswer.parse(Array(text.utf8), from: "the metadata server", wallNow: 1000)
    }

    func testTheMetadataServersTextAndTheTokenEndpointsJSONAreRead() throws {
        XCTAssertEqual(try parse(jwt(exp: 4600) + "\n").get(), AccessToken(value: jwt(exp: 4600), lifetime: 3600))
        XCTAssertEqual(try parse(#"{"id_token":"\#(jwt(exp: 2000))"}"#).get(), AccessToken(value: jwt(exp: 2000), lifetime: 1000))
    }

    func testWhatIsNotAUsableJWTIsRefusedWithoutIt() {
        for text in [jwt(exp: 999), "not a jwt", "", #"{"access_token":"x"}"#, jwt(exp: 4600) + " x"] {
            guard case .failure(let failure) = parse(text) else { XCTFail("refused: \(text)"); continue }
            XCTAssertEqual(failure.httpStatus, 502)
            XCTAssertFalse(failure.message.contains("eyJ"), failure.message)
        }
    }
}
