@testable import FleetTokenProxy
import Logging
@testable import ParserInvariants
import XCTest

/// The AWS credential source (docs/CONTRACT.md §4a): SigV4 against AWS's own example, the
/// file's settings, the metadata service's credentials answer, and the subject token's shape.
final class AWSSourceTests: XCTestCase {
    func testSigV4MatchesAWSsPublishedGetVanillaExample() {
        // aws-sig-v4-test-suite get-vanilla: GET / on example.amazonaws.com, service "service".
        let fields = SigV4.sign(method: "GET", host: "example.amazonaws.com", path: "/", query: "",
                                credentials: SigV4.Credentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
                                region: "us-east-1", amzDate: "20150830T123600Z", service: "service")
        XCTAssertEqual(fields.first?.value, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
                       + "SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31")
        XCTAssertEqual(fields.map(\.key), ["Authorization", "host", "x-amz-date"])
    }

    func testASessionTokenIsSignedAndSentAndTheQueryCanonical() {
        let credentials = SigV4.Credentials(accessKeyID: "ASIA1", secretAccessKey: "s", sessionToken: "t0ken")
        let fields = SigV4.sign(method: "POST", host: "sts.eu-west-3.amazonaws.com", path: "", query: "Version=2011-06-15&Action=GetCallerIdentity",
                                credentials: credentials, region: "eu-west-3", amzDate: "20260101T000000Z")
        XCTAssertTrue(fields[0].value.contains("/20260101/eu-west-3/sts/aws4_request, SignedHeaders=host;x-amz-date;x-amz-security-token,"), fields[0].value)
        XCTAssertEqual(fields.last?.key, "x-amz-security-token")
        XCTAssertEqual(SigV4.canonicalQuery("b=2&a=x%2Fy&a=1"), "a=1&a=x%2Fy&b=2")
        XCTAssertEqual(SigV4.amzDate(1_767_225_600), "20260101T000000Z")
        XCTAssertFalse("\(credentials)".contains("t0ken") || "\(credentials)".contains("\"s\""))
    }

    func testTheSubjectTokenIsTheSignedRequestAsJSONPercentEncodedForThePool() throws {
        let clock = ManualClock(wallNow: 1_767_225_600)
        let context = TokenExchangeContext(loop: try EventLoop(), tls: nil, timeout: 1, backoff: BackoffPolicy(), minValidity: 60,
                                           clock: clock, logger: Logger(label: "test"), random: { 0 })
        let source = AWSCredentialSource(verificationURL: "https://sts.{region}.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15",
                                         environment: ["AWS_REGION": "eu-west-3", "AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": "s"])
        let reader = try AWSSubjectTokenReader(source: source, audience: "//iam.googleapis.com/pool", file: "f", context: context)
        let token = try reader.signedRequest(region: "eu-west-3", credentials: SigV4.Credentials(accessKeyID: "A", secretAccessKey: "s")).get()
        XCTAssertFalse(token.contains("{") || token.contains("\""), "percent-encoded")
        let decoded = StandInFormDecoding.decode(token)
        guard case .object(let request)? = JSONish.parse(Array(decoded.utf8)), case .array(let headers)? = request["headers"] else {
            return XCTFail(decoded)
        }
        XCTAssertEqual(request["method"], .string("POST"))
        XCTAssertEqual(request["url"], .string("https://sts.eu-west-3.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15"))
        XCTAssertEqual(headers.compactMap { if case .object(let field) = $0 { field["key"]?.stringValue } else { nil } },
                       ["Authorization", "host", "x-amz-date", "x-goog-cloud-target-resource"])
        XCTAssertTrue(decoded.contains(#"{"key":"x-goog-cloud-target-resource","value":"//iam.googleapis.com/pool"}"#), decoded)
        XCTAssertTrue(decoded.contains(#"{"key":"x-amz-date","value":"20260101T000000Z"}"#), decoded)
    }

    func testTheFileNeedsAws1AnHttpsVerificationURLAndARegionAndCredentialsSomewhere() throws {
        func parse(_ source: [String: JSONish]) -> Result<AWSCredentialSource, ADCFileError> { AWSCredentialSource.parse(source) }
        let url = JSONish.string("https://sts.{region}.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15")
        XCTAssertNoThrow(try parse(["environment_id": .string("aws1"), "regional_cred_verification_url": url]).get())
        XCTAssertThrowsError(try parse(["environment_id": .string("aws2"), "regional_cred_verification_url": url]).get())
        XCTAssertThrowsError(try parse(["environment_id": .string("aws1"), "regional_cred_verification_url": .string("http://sts.{region}.amazonaws.com")]).get())
        let context = TokenExchangeContext(loop: try EventLoop(), tls: nil, timeout: 1, backoff: BackoffPolicy(), minValidity: 60,
                                           clock: ManualClock(), logger: Logger(label: "test"), random: { 0 })
        XCTAssertThrowsError(try AWSSubjectTokenReader(source: AWSCredentialSource(verificationURL: "https://sts.x.amazonaws.com"), audience: "a",
                                                       file: "f", context: context)) { error in
            XCTAssertTrue("\(error)".contains("no AWS region"), "\(error)")
        }
    }

    func testTheMetadataServicesCredentialsAreTakenAndTheInvariantCatchesALeak() throws {
        let body = Array(#"{"Code":"Success","AccessKeyId":"ASIA1","SecretAccessKey":"secret/key+0123456789","Token":"session-token-0123456789"}"#.utf8)
        let credentials = try AWSCredentialsAnswer.parse(body, from: "the AWS metadata service").get()
        XCTAssertEqual(credentials, SigV4.Credentials(accessKeyID: "ASIA1", secretAccessKey: "secret/key+0123456789", sessionToken: "session-token-0123456789"))
        XCTAssertNoThrow(try AWSCredentialsAnswerInvariant.check(body))
        XCTAssertThrowsError(try AWSCredentialsAnswerInvariant.checkDescription(credentials) { "\($0) \($0.secretAccessKey)" })
        XCTAssertThrowsError(try AWSCredentialsAnswerInvariant.checkRefusal("bad session-token-0123456789", answer: ["Token": .string("session-token-0123456789")]))
        guard case .failure(let failure) = AWSCredentialsAnswer.parse(Array(#"{"Code":"Failure","SecretAccessKey":"secret/key+0123456789"}"#.utf8), from: "x") else {
            return XCTFail("accepted a failure")
        }
        XCTAssertFalse(failure.message.contains("secret/key"))
    }
}

/// Percent-decoding for the test (what STS does to the subject token).
enum StandInFormDecoding {
    static func decode(_ text: String) -> String {
        var out: [UInt8] = []
        var bytes = Array(text.utf8)[...]
        while let byte = bytes.first {
            bytes = bytes.dropFirst()
            if byte == UInt8(ascii: "%"), bytes.count >= 2, let value = UInt8(String(decoding: bytes.prefix(2), as: UTF8.self), radix: 16) {
                out.append(value)
                bytes = bytes.dropFirst(2)
            } else {
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
