import XCTest
@testable import FleetTokenProxy

final class ProviderAnswerTests: XCTestCase {
    let now = 1_800_000_000.0

    private func parse(_ json: String, tokenField: String? = nil, expiryField: String? = nil) -> Result<FetchedToken, ProxyFailure> {
        ProviderAnswer.parse(body: Array(json.utf8), tokenField: tokenField, expiryField: expiryField, wallNow: now)
    }

    private func token(_ json: String, tokenField: String? = nil, expiryField: String? = nil,
                       file: StaticString = #filePath, line: UInt = #line) throws -> FetchedToken {
        switch parse(json, tokenField: tokenField, expiryField: expiryField) {
        case .success(let fetched):
            return fetched
        case .failure(let failure):
            XCTFail("refused: \(failure.message)", file: file, line: line)
            throw failure
        }
    }

    /// The refusal message; fails the test if the answer was accepted or refused otherwise.
    private func refusal(_ json: String, tokenField: String? = nil, expiryField: String? = nil,
                         file: StaticString = #filePath, line: UInt = #line) -> String {
        switch parse(json, tokenField: tokenField, expiryField: expiryField) {
        case .success:
            XCTFail("accepted", file: file, line: line)
            return ""
        case .failure(.providerAnswerUnusable(let message)):
            return message
        case .failure(let other):
            XCTFail("refused as \(other), not providerAnswerUnusable", file: file, line: line)
            return ""
        }
    }

    // MARK: Token field

    func testTokenFieldWithEpochSecondsExpiry() throws {
        let fetched = try token(#"{"token":"opaque-1","expirationTimestamp":1800003600}"#)
        XCTAssertEqual(fetched, FetchedToken(token: "opaque-1", expiresAt: 1_800_003_600, issuedAt: nil))
    }

    func testDefaultTokenFieldsAreTriedInOrder() throws {
        XCTAssertEqual(try token(#"{"jwt":"j","access_token":"a","expires_in":60}"#).token, "j")
        XCTAssertEqual(try token(#"{"access_token":"a","expires_in":60}"#).token, "a")
        XCTAssertEqual(try token(#"{"access_token":"a","token":"t","jwt":"j","expires_in":60}"#).token, "t")
        XCTAssertEqual(try token(#"{"token":null,"jwt":"j","expires_in":60}"#).token, "j")
    }

    func testConfiguredTokenFieldIsTheOnlyOneRead() throws {
        XCTAssertEqual(try token(#"{"token":"t","bearer":"b","expires_in":60}"#, tokenField: "bearer").token, "b")
        let message = refusal(#"{"token":"t","expires_in":60}"#, tokenField: "bearer")
        XCTAssertTrue(message.contains("\"bearer\""), message)
    }

    func testMissingTokenIsRefusedNamingTheFieldsLookedFor() {
        let message = refusal(#"{"expires_in":60}"#)
        XCTAssertTrue(message.contains("\"token\"") && message.contains("\"access_token\""), message)
    }

    func testNonStringOrEmptyTokenIsRefused() {
        XCTAssertTrue(refusal(#"{"token":42,"expires_in":60}"#).contains("not a string"))
        XCTAssertTrue(refusal(#"{"token":{"v":"x"},"expires_in":60}"#).contains("not a string"))
        XCTAssertTrue(refusal(#"{"token":"","expires_in":60}"#).contains("empty"))
    }

    func testTokenWithNewlineIsRefused() {
        let message = refusal(#"{"token":"abc\r\nX-Injected: 1","expires_in":60}"#)
        XCTAssertTrue(message.contains("\"token\""), message)
        _ = refusal(#"{"token":"abc\n","expires_in":60}"#)
    }

    func testTokenWithSpaceControlOrNonASCIIIsRefused() {
        for bad in [#"a b"#, #"a\tb"#, #"a\u0000b"#, "a\u{7F}b", "tökén", #"a\u2028b"#] {
            _ = refusal(#"{"token":"\#(bad)","expires_in":60}"#)
        }
    }

    // MARK: Expiry forms

    func testEpochMillisecondsExpiry() throws {
        XCTAssertEqual(try token(#"{"token":"t","expiration":1800003600000}"#).expiresAt, 1_800_003_600)
    }

    func testRelativeExpiry() throws {
        XCTAssertEqual(try token(#"{"token":"t","expiresInSeconds":3600}"#).expiresAt, now + 3600)
        XCTAssertEqual(try token(#"{"token":"t","TOKEN_EXPIRATION":"900"}"#).expiresAt, now + 900)
    }

    func testRFC3339ExpiryWithOffset() throws {
        // `now` is 2027-01-15T08:00:00Z; 10:00 at +01:00 is one hour later.
        let fetched = try token(#"{"token":"t","expires_at":"2027-01-15T10:00:00+01:00"}"#)
        XCTAssertEqual(fetched.expiresAt, now + 3600)
    }

    func testDefaultExpiryFieldsAreTriedInOrder() throws {
        let fetched = try token(#"{"token":"t","expires_in":60,"expiration":1800000100,"expirationTimestamp":1800000200}"#)
        XCTAssertEqual(fetched.expiresAt, 1_800_000_200)
        XCTAssertEqual(try token(#"{"token":"t","expires_in":60,"expires_at":1800000100}"#).expiresAt, 1_800_000_100)
        XCTAssertEqual(try token(#"{"token":"t","expirationTimestamp":null,"expires_in":60}"#).expiresAt, now + 60)
    }

    func testConfiguredExpiryFieldIsTheOnlyOneRead() throws {
        let fetched = try token(#"{"token":"t","expires_in":60,"validUntil":1800000500}"#, expiryField: "validUntil")
        XCTAssertEqual(fetched.expiresAt, 1_800_000_500)
        let message = refusal(#"{"token":"t","expires_in":60}"#, expiryField: "validUntil")
        XCTAssertTrue(message.contains("\"validUntil\""), message)
    }

    func testJWTExpEarlierThanFieldWins() throws {
        let jwt = makeJWT(exp: now + 600, iat: now - 3000)
        let fetched = try token(#"{"token":"\#(jwt)","expires_in":3600}"#)
        XCTAssertEqual(fetched.expiresAt, now + 600)
        XCTAssertEqual(fetched.issuedAt, now - 3000)
    }

    func testFieldEarlierThanJWTExpWins() throws {
        let jwt = makeJWT(exp: now + 3600, iat: now)
        let fetched = try token(#"{"token":"\#(jwt)","expirationTimestamp":\#(Int(now) + 1200)}"#)
        XCTAssertEqual(fetched.expiresAt, now + 1200)
        XCTAssertEqual(fetched.issuedAt, now)
    }

    func testJWTExpAloneIsAnExpiry() throws {
        let jwt = makeJWT(exp: now + 3600)
        let fetched = try token(#"{"jwt":"\#(jwt)"}"#)
        XCTAssertEqual(fetched, FetchedToken(token: jwt, expiresAt: now + 3600, issuedAt: nil))
        // Decoded once here and carried, for TokenScopeCheck.
        XCTAssertEqual(fetched.claims, JWTClaims.decode(jwt))
        XCTAssertEqual(fetched.claims?.exp, now + 3600)
        XCTAssertNil(try token(#"{"token":"opaque","expires_in":60}"#).claims)
    }

    // MARK: Refusals

    func testNoExpiryIsRefused() {
        let message = refusal(#"{"token":"opaque"}"#)
        XCTAssertTrue(message.contains("no expiry"), message)
        _ = refusal(#"{"token":"\#(makeJWT(exp: nil, iat: now))"}"#)
    }

    func testExpiredTokenIsRefused() {
        XCTAssertTrue(refusal(#"{"token":"t","expirationTimestamp":1799999000}"#).contains("expired"))
        XCTAssertTrue(refusal(#"{"token":"t","expirationTimestamp":1800000000}"#).contains("expired"))
        // The field says later, but the JWT itself has run out.
        let jwt = makeJWT(exp: now - 1, iat: now - 3601)
        XCTAssertTrue(refusal(#"{"token":"\#(jwt)","expires_in":3600}"#).contains("expired"))
    }

    func testUnreadableExpiryIsRefusedNamingTheField() {
        let message = refusal(#"{"token":"t","expiration":"tomorrow"}"#)
        XCTAssertTrue(message.contains("\"expiration\""), message)
        _ = refusal(#"{"token":"t","expires_in":true}"#)
        _ = refusal(#"{"token":"t","expires_in":-30}"#)
    }

    func testBodyThatIsNotAJSONObjectIsRefused() {
        XCTAssertTrue(refusal("<html>502</html>").contains("not JSON"))
        XCTAssertTrue(refusal(#"["token"]"#).contains("not a JSON object"))
        XCTAssertTrue(refusal("").contains("not JSON"))
    }

    func testRefusalMessagesNeverContainTheTokenOrTheBody() {
        let secret = "SECRET-7f3a9c"
        let jwt = makeJWT(payload: #"{"exp":1,"sub":"\#(secret)"}"#)
        let answers: [(String, String?, String?)] = [
            (#"{"token":"\#(secret)\r\nX: y","expires_in":60}"#, nil, nil),
            (#"{"token":"\#(secret) x","expires_in":60}"#, nil, nil),
            (#"{"token":"\#(secret)"}"#, nil, nil),
            (#"{"token":"\#(secret)","expires_in":"\#(secret)"}"#, nil, nil),
            (#"{"token":"\#(secret)","expires_in":1799990000}"#, nil, nil),
            (#"{"token":"\#(jwt)","expires_in":60}"#, nil, nil),
            (#"{"other":"\#(secret)","expires_in":60}"#, nil, nil),
            (#"{"token":"\#(secret)","expires_in":60}"#, "missing", nil),
            (#"{"token":"\#(secret)","expires_in":60}"#, nil, "missing"),
            (#"{"token":"\#(secret)", broken"#, nil, nil),
        ]
        for (body, tokenField, expiryField) in answers {
            let message = refusal(body, tokenField: tokenField, expiryField: expiryField)
            XCTAssertFalse(message.isEmpty, body)
            XCTAssertFalse(message.contains(secret), message)
            XCTAssertFalse(message.contains(jwt), message)
            XCTAssertFalse(message.contains("X: y"), message)
        }
    }
}
