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
    /// Certificates, with `makeMutualTLSStandIns`.
    var pki: TestPKI!
    var directory: String!
    var google: StandInGoogle { standIns.google! }

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "ftp-adc-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        standIns = try makeStandIns()
    }

    /// The stand-ins with the stand-in Google (`directory` is there already).
    func makeStandIns() throws -> StandInHost {
        try StandInHost(google: true)
    }

    override func tearDown() {
        standIns?.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// ADC from nothing but `environment`: HOME is the test's own directory.
    func sidecar(_ flags: [String], environment: [String: String], provider: Bool = false, waitForListening: Bool = true) throws -> SidecarProcess {
        try SidecarProcess(["--upstream", "http://\(standIns.fleetEngineAddress)"]
            + (provider ? ["--provider-url", standIns.providerTemplate] : []) + flags,
            // Nothing of the test host's own credentials settings: each test says what it wants.
            environment: ["HOME": directory, "GOOGLE_APPLICATION_CREDENTIALS": "", "GCE_METADATA_HOST": "", "GOOGLE_CLOUD_QUOTA_PROJECT": "",
                          "GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES": "", "GOOGLE_API_CERTIFICATE_CONFIG": "",
                          "CLOUDSDK_CONFIG": ""].merging(environment) { $1 }, waitForListening: waitForListening)
    }

    var account: String { google.account.email }
    var tokenFile: String { directory + "/oidc-token" }
    var stsRequests: Int { standIns.sync { self.google.stsRequests } }
    /// `http://` or (over TLS) `https://` and the stand-in Google's address.
    var googleOrigin: String { String(standIns.sync { self.google.tokenURI }.dropLast("/token".count)) }

    func writeSubjectToken(_ token: String) {
        _ = FileManager.default.createFile(atPath: tokenFile, contents: Data(token.utf8))
    }

    /// What `gcloud iam workload-identity-pools create-cred-config` writes, its subject token in
    /// `tokenFile` (a valid one written now) unless `source` says otherwise.
    func externalAccountEnvironment(impersonate: Bool = false, source: JSONish? = nil, extra: [String: JSONish] = [:],
                                    tokenURL: String? = nil) throws -> [String: String] {
        writeSubjectToken(standIns.sync { self.google.subjectToken() })
        var members: [String: JSONish] = [
            "type": .string("external_account"), "audience": .string(standIns.sync { self.google.poolAudience }),
            "subject_token_type": .string("urn:ietf:params:oauth:token-type:jwt"),
            "token_url": .string(tokenURL ?? "\(googleOrigin)/v1/token"),
            "credential_source": source ?? .object(["file": .string(tokenFile)]), "quota_project_id": .string("billed"),
        ]
        if impersonate {
            members["service_account_impersonation_url"] = .string("\(googleOrigin)/v1/projects/-/serviceAccounts/\(account):generateAccessToken")
            members["service_account_impersonation"] = .object(["token_lifetime_seconds": .number(1800)])
        }
        members.merge(extra) { $1 }
        let path = directory + "/external.json"
        _ = FileManager.default.createFile(atPath: path, contents: Data(JSONish.object(members).jsonText.utf8))
        return ["GOOGLE_APPLICATION_CREDENTIALS": path]
    }

    /// With `--signer adc` over an external account: a vehicle's call and a trip's both go
    /// through, on the one token STS handed out.
    func assertOneExchangeServesEveryEntity(_ sidecar: SidecarProcess, file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 200, sidecar.log, file: file, line: line)
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/trips/t1").status, 200, sidecar.log, file: file, line: line)
        XCTAssertEqual(stsRequests, 1, "one exchange for every entity", file: file, line: line)
        let last = String(try XCTUnwrap(lastAuthorization, file: file, line: line).dropFirst("Bearer ".count))
        XCTAssertTrue(standIns.sync { self.google.federatedTokens.contains(last) }, "Fleet Engine saw STS's federated token", file: file, line: line)
    }

    var impersonationURL: String { "\(googleOrigin)/v1/projects/-/serviceAccounts/\(account):generateAccessToken" }

    /// The file `gcloud auth application-default login --impersonate-service-account` writes,
    /// its source a user (known to the stand-in) or the stand-in account's key.
    func impersonationEnvironment(keySource: Bool = false, delegates: [String] = [], target: String? = nil) throws -> [String: String] {
        let source: JSONish
        if keySource {
            guard case .object(let key)? = JSONish.parse(Array(try google.account.keyFileJSON(tokenURI: google.tokenURI).utf8)) else {
                throw SidecarError("key file JSON")
            }
            source = .object(key)
        } else {
            standIns.sync { self.google.authorizedUser = ("client.apps.googleusercontent.com", "s3cret", "1//r3fresh") }
            source = .object(["type": .string("authorized_user"), "client_id": .string("client.apps.googleusercontent.com"),
                              "client_secret": .string("s3cret"), "refresh_token": .string("1//r3fresh")])
        }
        let url = target.map { impersonationURL.replacingOccurrences(of: account, with: $0) } ?? impersonationURL
        let file = JSONish.object([
            "type": .string("impersonated_service_account"), "service_account_impersonation_url": .string(url),
            "delegates": .array(delegates.map { .string($0) }), "quota_project_id": .string("billed"), "source_credentials": source,
        ]).jsonText
        let path = directory + "/impersonated.json"
        _ = FileManager.default.createFile(atPath: path, contents: Data(file.utf8), attributes: [.posixPermissions: 0o600])
        return ["GOOGLE_APPLICATION_CREDENTIALS": path]
    }

    let noAWSEnvironment = ["AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": ""]

    /// What `create-cred-config --aws --enable-imdsv2` writes, its metadata URLs at `imds`
    /// (none without it).
    func awsEnvironment(imds: String?, sessionToken: Bool = true, impersonate: Bool = false) throws -> [String: String] {
        var source: [String: JSONish] = [
            "environment_id": .string("aws1"),
            "regional_cred_verification_url": .string("https://sts.{region}.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15"),
        ]
        if let imds {
            source["region_url"] = .string("http://\(imds)\(StandInAWS.zonePath)")
            source["url"] = .string("http://\(imds)\(StandInAWS.credentialsPath)")
            if sessionToken { source["imdsv2_session_token_url"] = .string("http://\(imds)\(StandInAWS.tokenPath)") }
        }
        let environment = try externalAccountEnvironment(impersonate: impersonate, source: .object(source),
                                                         extra: ["subject_token_type": .string("urn:ietf:params:aws:token-type:aws4_request")])
        return noAWSEnvironment.merging(environment) { $1 }
    }

    /// The stand-ins with the stand-in Google over TLS asking every client for a certificate,
    /// its STS trusting the pool's root of `pki` (made here, in `directory`).
    func makeMutualTLSStandIns() throws -> StandInHost {
        pki = try TestPKI(in: directory)
        let standIns = try StandInHost(google: true, googleTLS: (cert: pki.path("server.pem"), key: pki.path("server.key")))
        let anchor = try StandInTrustAnchor(caFile: pki.path("pool-root.pem"))
        standIns.sync { standIns.google?.trustAnchor = anchor }
        return standIns
    }

    /// What `create-cred-config --credential-cert-path` writes: the credentials file and the
    /// certificate config (at `configLocation`, or gcloud's default place in HOME), naming
    /// `device`'s certificate and `key`'s key; the sidecar trusts the stand-in Google's CA.
    func certificateEnvironment(device: String = "device", key: String? = nil, trustChain: Bool = true, impersonate: Bool = false,
                                useDefaultConfig: Bool = false, tokenURL: String? = nil) throws -> [String: String] {
        let config = JSONish.object(["version": .number(1), "cert_configs": .object(["workload": .object([
            "cert_path": .string(pki.path(device + ".pem")), "key_path": .string(pki.path((key ?? device) + ".key")),
        ])])]).jsonText
        var certificate: [String: JSONish] = [:]
        if useDefaultConfig {
            let gcloud = directory + "/.config/gcloud"
            try FileManager.default.createDirectory(atPath: gcloud, withIntermediateDirectories: true)
            try config.write(toFile: gcloud + "/certificate_config.json", atomically: true, encoding: .utf8)
            certificate["use_default_certificate_config"] = .bool(true)
        } else {
            try config.write(toFile: directory + "/certificate_config.json", atomically: true, encoding: .utf8)
            certificate["certificate_config_location"] = .string(directory + "/certificate_config.json")
        }
        if trustChain { certificate["trust_chain_path"] = .string(pki.path("pool-intermediate.pem")) }
        var environment = try externalAccountEnvironment(impersonate: impersonate, source: .object(["certificate": .object(certificate)]),
                                                         extra: ["subject_token_type": .string(CertificateCredentialSource.subjectTokenType)], tokenURL: tokenURL)
        environment["SSL_CERT_FILE"] = pki.path("server-ca.pem")
        return environment
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
