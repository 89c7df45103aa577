import XCTest
@testable import FleetTokenProxy

/// What the token endpoint and the metadata server answer, and how each status maps to the
/// client's error (docs/CONTRACT.md §5).
final class AccessTokenAnswerTests: XCTestCase {
    func parse(_ text: String) -> Result<AccessToken, ProxyFailure> {
        AccessTokenAnswer.parse(Array(text.utf8), from: "the OAuth token endpoint")
    }

    func testGooglesAnswerIsRead() throws {
        let token = try parse(#"{"access_token":"ya29.c.abc","expires_in":3599,"token_type":"Bearer"}"#).get()
        XCTAssertEqual(token, AccessToken(value: "ya29.c.abc", lifetime: 3599))
        XCTAssertFalse("\(token)".contains("ya29"), "the description never shows the token")
    }

    func testUnusableAnswersAreRefusedWithoutTheToken() {
        let cases = [
            "not json", #"{"expires_in":3599}"#, #"{"access_token":"ya29.secret","token_type":"Bearer"}"#,
            #"{"access_token":"ya29.secret","expires_in":-1}"#, #"{"access_token":"ya29.secret","expires_in":3599,"token_type":"MAC"}"#,
            #"{"access_token":"ya29 secret","expires_in":3599}"#, #"{"access_token":"ya29.secret","expires_in":"3599"}"#,
        ]
        for text in cases {
            guard case .failure(let failure) = parse(text) else { XCTFail("refused: \(text)"); continue }
            XCTAssertEqual(failure.httpStatus, 502, text)
            XCTAssertFalse(failure.message.contains("secret"), text)
        }
    }

    func testStatusesMapToTheContractRows() {
        func interpret(_ status: Int, _ body: String) -> ProxyFailure? {
            let answer = EndpointClient.Answer(status: status, body: Array(body.utf8))
            if case .failure(let failure) = GoogleAnswer.interpret(answer, from: "the OAuth token endpoint", AccessTokenAnswer.parse) { return failure }
            return nil
        }
        let refused = interpret(400, #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#)
        XCTAssertEqual(refused, .providerRefused("the OAuth token endpoint refused with HTTP 400: invalid_grant: Invalid JWT Signature."))
        XCTAssertEqual(refused?.httpStatus, 403)
        XCTAssertEqual(interpret(403, #"{"error":{"code":403,"message":"Permission 'iam.serviceAccounts.signJwt' denied","status":"PERMISSION_DENIED"}}"#)?.message,
                       "the OAuth token endpoint refused with HTTP 403: PERMISSION_DENIED: Permission 'iam.serviceAccounts.signJwt' denied")
        for status in [429, 500, 503, 408] { XCTAssertEqual(interpret(status, "busy")?.httpStatus, 503, "\(status)") }
        XCTAssertEqual(interpret(200, "{}")?.httpStatus, 502)
        XCTAssertNil(interpret(200, #"{"access_token":"t","expires_in":60}"#))
    }

    func testAnEndpointsTextIsCutShortAndPrintable() {
        let long = String(repeating: "x", count: 500)
        let said = AccessTokenAnswer.refusal(Array(#"{"error":"bad\r\n","error_description":"\#(long)"}"#.utf8))
        XCTAssertEqual(said?.hasPrefix("bad??: xxx"), true)
        XCTAssertLessThan(said?.count ?? 0, 220)
    }
}
