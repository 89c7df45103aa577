@testable import FleetTokenProxy
@testable import ParserInvariants
import XCTest

/// The access-token-answer and adc-file fuzz targets' invariants can fail: each of these breaks
/// one on purpose.
final class ADCInvariantTests: XCTestCase {
    let body: [String: JSONish] = ["access_token": .string("ya29.a"), "expires_in": .number(3599)]

    func testAnAcceptedTokenMustBeTheBodysOwnWithinADay() throws {
        try AccessTokenAnswerInvariant.checkAccepted(AccessToken(value: "ya29.a", lifetime: 3599), body: body)
        for wrong in [AccessToken(value: "ya29.b", lifetime: 3599), AccessToken(value: "ya29.a", lifetime: 60)] {
            XCTAssertThrowsError(try AccessTokenAnswerInvariant.checkAccepted(wrong, body: body), "\(wrong)")
        }
        var long = body
        long["expires_in"] = .number(100_000)
        XCTAssertThrowsError(try AccessTokenAnswerInvariant.checkAccepted(AccessToken(value: "ya29.a", lifetime: 100_000), body: long))
    }

    func testARefusalMustBePrintableAndShort() throws {
        try AccessTokenAnswerInvariant.checkRefusal("invalid_grant: Bad Request")
        XCTAssertThrowsError(try AccessTokenAnswerInvariant.checkRefusal("bad\r\n"))
        XCTAssertThrowsError(try AccessTokenAnswerInvariant.checkRefusal(String(repeating: "x", count: 500)))
    }

    func testAnAuthorizedUsersFieldsMustBeTheFilesOwn() throws {
        let file: [String: JSONish] = [
            "type": .string("authorized_user"), "client_id": .string("c"), "client_secret": .string("s3cret"), "refresh_token": .string("r3fresh"),
        ]
        try ADCFileInvariant.checkAccepted(AuthorizedUserCredentials(clientID: "c", clientSecret: "s3cret", refreshToken: "r3fresh"), file: file)
        let wrong = [
            AuthorizedUserCredentials(clientID: "c", clientSecret: "s", refreshToken: "other"),
            AuthorizedUserCredentials(clientID: "c", clientSecret: "s3cret", refreshToken: "r3fresh", quotaProjectID: "q"),
        ]
        for user in wrong {
            XCTAssertThrowsError(try ADCFileInvariant.checkAccepted(user, file: file))
        }
    }
}
