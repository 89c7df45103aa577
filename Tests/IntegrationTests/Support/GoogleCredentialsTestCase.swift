@testable import FleetTokenProxy
@testable import FleetTokenProxyStandIns
import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// What the tests of the ADC-based sources share: the stand-ins with the stand-in Google, a
/// temporary HOME, the sidecar started with ADC from nothing but the environment it is given.
class GoogleCredentialsTestCase: XCTestCase {
    var standIns: StandInHost!
    var directory: String!
    var google: StandInGoogle { standIns.google! }

    override func setUpWithError() throws {
        standIns = try StandInHost(google: true)
        directory = NSTemporaryDirectory() + "ftp-adc-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        standIns?.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// ADC from nothing but `environment`: HOME is the test's own directory.
    func sidecar(_ flags: [String], environment: [String: String], provider: Bool = false) throws -> SidecarProcess {
        try SidecarProcess(["--upstream", "http://\(standIns.fleetEngineAddress)"]
            + (provider ? ["--provider-url", standIns.providerTemplate] : []) + flags,
            // Nothing of the test host's own credentials settings: each test says what it wants.
            environment: ["HOME": directory, "GOOGLE_APPLICATION_CREDENTIALS": "", "GCE_METADATA_HOST": "", "GOOGLE_CLOUD_QUOTA_PROJECT": "",
                          "GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES": ""].merging(environment) { $1 })
    }

    /// The stand-in Google's service-account key as an ADC file whose token URI is the stand-in.
    func keyFileEnvironment() throws -> [String: String] {
        let path = directory + "/adc.json"
        try google.account.writeKeyFile(to: path, tokenURI: google.tokenURI)
        return ["GOOGLE_APPLICATION_CREDENTIALS": path]
    }

    /// A user's `gcloud auth application-default login` file in HOME, known to the stand-in,
    /// with quota project "p".
    func writeGcloudUserFile() throws {
        standIns.sync { self.google.authorizedUser = ("client.apps.googleusercontent.com", "s3cret", "1//r3fresh") }
        let gcloud = directory + "/.config/gcloud"
        try FileManager.default.createDirectory(atPath: gcloud, withIntermediateDirectories: true)
        let user = #"{"type":"authorized_user","client_id":"client.apps.googleusercontent.com","client_secret":"s3cret","refresh_token":"1//r3fresh","quota_project_id":"p"}"#
        FileManager.default.createFile(atPath: gcloud + "/application_default_credentials.json", contents: Data(user.utf8))
    }

    func call(_ sidecar: SidecarProcess, _ path: String) throws -> (status: Int, body: String) {
        let out = try curl(["-w", "\n%{http_code}", sidecar.baseURL + path]).stdout
        let lines = out.split(separator: "\n", omittingEmptySubsequences: false)
        return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
    }

    var lastAuthorization: String? { standIns.sync { self.standIns.seenAuthorizations.last } }
    var tokenRequests: Int { standIns.sync { self.google.tokenRequests } }
    var fleetEngineStatistics: StandInFleetEngineStatistics { standIns.sync { self.standIns.fleetEngine.statistics } }

    func assertNoTokenIn(_ text: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertFalse(text.contains(StandInAccessToken.prefix), "no access token in \(text)", file: file, line: line)
    }

    /// A loopback port nothing listens on (bound, then closed).
    func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw SidecarError("no free port") }
        return UInt16(bigEndian: address.sin_port)
    }
}
