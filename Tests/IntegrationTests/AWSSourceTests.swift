@testable import FleetTokenProxy
@testable import FleetTokenProxyStandIns
import Foundation
import XCTest

/// `external_account` for an AWS host (docs/CONTRACT.md §4a, `environment_id` aws1): the
/// region and credentials from the stand-in instance metadata service (IMDSv2) or the
/// environment, a SigV4-signed `GetCallerIdentity` request as the subject token, which the
/// stand-in STS verifies with the credentials' secret. The secret never leaves the sidecar.
final class AWSSourceTests: GoogleCredentialsTestCase {
    func assertNoAWSSecretIn(_ text: String, _ credentials: SigV4.Credentials, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertFalse(text.contains(credentials.secretAccessKey), "no secret key in \(text)", file: file, line: line)
        if let token = credentials.sessionToken { XCTAssertFalse(text.contains(token), "no session token in \(text)", file: file, line: line) }
        XCTAssertFalse(text.contains("AWS4-HMAC-SHA256 Credential"), "no signed request in \(text)", file: file, line: line)
    }

    func testAnEC2InstancesRoleCredentialsFromIMDSv2SignTheSubjectToken() throws {
        let (aws, imds) = try standIns.serveAWS()
        standIns.sync { self.google.awsCredentials = [aws.credentials.accessKeyID: aws.credentials] }
        let sidecar = try sidecar(["--signer", "adc"], environment: try awsEnvironment(imds: imds))
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 200, sidecar.log)
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/trips/t1").status, 200, sidecar.log)
        XCTAssertEqual(stsRequests, 1)
        XCTAssertEqual(standIns.sync { self.google.awsRegions }, ["eu-west-3"], "the availability zone less its letter")
        XCTAssertGreaterThanOrEqual(standIns.sync { aws.sessionTokenRequests }, 1, "IMDSv2")
        XCTAssertEqual(standIns.sync { aws.credentialRequests }, 1)
        XCTAssertTrue(sidecar.log.contains("AWS (the instance metadata service)"), sidecar.log)
        assertNoAWSSecretIn(sidecar.log, aws.credentials)
    }

    func testCredentialsAndRegionFromTheEnvironmentNeedNoMetadataService() throws {
        let credentials = SigV4.Credentials(accessKeyID: "AKIAENVIRONMENT01", secretAccessKey: "environment/secret+key")
        standIns.sync { self.google.awsCredentials = [credentials.accessKeyID: credentials] }
        var environment = try awsEnvironment(imds: nil)
        environment.merge(["AWS_REGION": "us-west-2", "AWS_ACCESS_KEY_ID": credentials.accessKeyID,
                           "AWS_SECRET_ACCESS_KEY": credentials.secretAccessKey]) { $1 }
        let sidecar = try sidecar(["--signer", "adc"], environment: environment)
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 200, sidecar.log)
        XCTAssertEqual(standIns.sync { self.google.awsRegions }, ["us-west-2"])
        assertNoAWSSecretIn(sidecar.log, credentials)
    }

    func testAWrongSecretIsRefusedBySTSWithItsOwnTextAndNeverShown() throws {
        let known = SigV4.Credentials(accessKeyID: "AKIAENVIRONMENT01", secretAccessKey: "the/real+secret")
        standIns.sync { self.google.awsCredentials = [known.accessKeyID: known] }
        let wrong = SigV4.Credentials(accessKeyID: known.accessKeyID, secretAccessKey: "a/wrong+secret")
        var environment = try awsEnvironment(imds: nil)
        environment.merge(["AWS_DEFAULT_REGION": "ap-south-1", "AWS_ACCESS_KEY_ID": wrong.accessKeyID,
                           "AWS_SECRET_ACCESS_KEY": wrong.secretAccessKey]) { $1 }
        let sidecar = try sidecar(["--signer", "adc"], environment: environment)
        defer { sidecar.stop() }
        let answer = try call(sidecar, "/v1/providers/p/vehicles/v1")
        XCTAssertEqual(answer.status, 403, answer.body)
        XCTAssertTrue(answer.body.contains("STS refused with HTTP 400: invalid_grant: The AWS request signature does not match."), answer.body)
        assertNoAWSSecretIn(answer.body + sidecar.log, wrong)
    }

    func testAMetadataServiceThatRefusesIsPermissionDeniedAndOneThatIsDownUnavailable() throws {
        let (_, imds) = try standIns.serveAWS()
        let sidecar = try sidecar(["--signer", "adc", "--provider-backoff-max", "0.2"], environment: try awsEnvironment(imds: imds, sessionToken: false))
        defer { sidecar.stop() }
        let refused = try call(sidecar, "/v1/providers/p/vehicles/v1")
        XCTAssertEqual(refused.status, 403, refused.body)
        XCTAssertTrue(refused.body.contains("the AWS metadata service refused with HTTP 401"), "IMDSv2 wants its session token: \(refused.body)")
        XCTAssertEqual(stsRequests, 0)
        let other = try self.sidecar(["--signer", "adc"], environment: try awsEnvironment(imds: "127.0.0.1:\(try freePort())"))
        defer { other.stop() }
        let down = try call(other, "/v1/providers/p/vehicles/v1")
        XCTAssertEqual(down.status, 503, down.body)
        XCTAssertTrue(down.body.contains("the AWS metadata service unreachable"), down.body)
    }
}
