@testable import FleetTokenProxy
@testable import ParserInvariants
import XCTest

/// The X.509 `credential_source` of an `external_account` (docs/CONTRACT.md §4a): the file's
/// `certificate` member, where its certificate config is found, what the config names, and the
/// subject token built from the certificates. No files, no sockets.
final class CertificateSourceTests: XCTestCase {
    let gcloudConfig = Array(#"{"version": 1, "cert_configs": {"workload": {"cert_path": "/etc/fleet/device.pem", "key_path": "/etc/fleet/device.key"}}, "libs": {}}"#.utf8)

    func testTheConfigGcloudWritesNamesTheWorkloadsCertificateAndKey() throws {
        XCTAssertEqual(try CertificateConfig.parse(gcloudConfig).get(),
                       CertificateConfig(certificatePath: "/etc/fleet/device.pem", keyPath: "/etc/fleet/device.key"))
        XCTAssertNoThrow(try CertificateConfigInvariant.check(gcloudConfig))
    }

    func testAConfigWithoutAUsableWorkloadIsRefusedByMember() {
        let cases: [(String, String)] = [
            ("[]", "is not a JSON object"),
            (#"{"cert_configs": {"keychain": {}}}"#, "\"cert_configs.workload\""),
            (#"{"cert_configs": {"workload": {"cert_path": "/c"}}}"#, "\"cert_configs.workload.key_path\""),
            (#"{"cert_configs": {"workload": {"cert_path": "/c\u0000x", "key_path": "/k"}}}"#, "\"cert_configs.workload.cert_path\""),
            (#"{"cert_configs": {"workload": {"cert_path": "/c", "key_path": ""}}}"#, "\"cert_configs.workload.key_path\""),
        ]
        for (text, named) in cases {
            guard case .failure(let error) = CertificateConfig.parse(Array(text.utf8)) else { return XCTFail("accepted \(text)") }
            XCTAssertTrue(error.message.contains(named), "\(text): \(error.message)")
        }
    }

    func testTheConfigInvariantCatchesAPathThatIsNotTheFilesOrARefusalThatIsNotTheParsers() {
        let members: [String: JSONish] = ["cert_configs": .object(["workload": .object(["cert_path": .string("/c"), "key_path": .string("/k")])])]
        XCTAssertNoThrow(try CertificateConfigInvariant.checkAccepted(CertificateConfig(certificatePath: "/c", keyPath: "/k"), file: members))
        XCTAssertThrowsError(try CertificateConfigInvariant.checkAccepted(CertificateConfig(certificatePath: "/c", keyPath: "/other"), file: members))
        XCTAssertThrowsError(try CertificateConfigInvariant.checkRefusal("cannot open /etc/fleet/device.key"))
    }

    func testTheCertificateMemberTakesALocationOrTheDefaultAndATrustChain() throws {
        let located = try CertificateCredentialSource.parse(["certificate": .object([
            "certificate_config_location": .string("/etc/fleet/certificate_config.json"), "trust_chain_path": .string("/etc/fleet/chain.pem"),
        ])]).get()
        XCTAssertEqual(located, CertificateCredentialSource(configLocation: "/etc/fleet/certificate_config.json", trustChainPath: "/etc/fleet/chain.pem"))
        let byDefault = try CertificateCredentialSource.parse(["certificate": .object(["use_default_certificate_config": .bool(true)])]).get()
        XCTAssertEqual(byDefault, CertificateCredentialSource())
        for members: [String: JSONish] in [
            ["certificate": .object(["use_default_certificate_config": .bool(true), "certificate_config_location": .string("/c.json")])],
            ["certificate": .object(["use_default_certificate_config": .bool(false)])],
            ["certificate": .object(["use_default_certificate_config": .string("true")])],
            ["certificate": .object(["use_default_certificate_config": .bool(true)]), "url": .string("http://x/")],
            ["certificate": .string("/c.json")],
        ] {
            XCTAssertThrowsError(try CertificateCredentialSource.parse(members).get(), "\(members)")
        }
    }

    func testTheDefaultConfigIsTheVariablesElseGcloudsAsTheADCFileIsFound() {
        let source = CertificateCredentialSource()
        XCTAssertEqual(source.configPath(environment: ["HOME": "/home/d"]), "/home/d/.config/gcloud/certificate_config.json")
        XCTAssertEqual(source.configPath(environment: ["HOME": "/home/d", "CLOUDSDK_CONFIG": "/etc/gcloud"]), "/etc/gcloud/certificate_config.json")
        XCTAssertEqual(source.configPath(environment: ["HOME": "/home/d", "GOOGLE_API_CERTIFICATE_CONFIG": "/run/c.json"]), "/run/c.json")
        let located = CertificateCredentialSource(configLocation: "/etc/c.json")
        XCTAssertEqual(located.configPath(environment: ["GOOGLE_API_CERTIFICATE_CONFIG": "/run/c.json"]), "/etc/c.json", "the file's own wins")
    }

    func testADCFindsTheCertificateConfigAtStartAndNamesItsFiles() throws {
        let adc = #"{"type": "external_account", "audience": "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/x509", "subject_token_type": "urn:ietf:params:oauth:token-type:mtls", "token_url": "https://sts.mtls.googleapis.com/v1/token", "credential_source": {"certificate": {"use_default_certificate_config": true}}}"#
        let files = ["/adc.json": Array(adc.utf8), "/home/d/.config/gcloud/certificate_config.json": gcloudConfig]
        let found = try ApplicationDefaultCredentials.find(
            environment: ["GOOGLE_APPLICATION_CREDENTIALS": "/adc.json", "HOME": "/home/d"], readFile: { files[$0] }, probeMetadataServer: { false })
        guard case .externalAccount(let account) = found.source, case .certificate(let source) = account.subjectTokenSource else {
            return XCTFail("\(found.source)")
        }
        XCTAssertEqual(source.certificatePath, "/etc/fleet/device.pem")
        XCTAssertEqual(source.keyPath, "/etc/fleet/device.key")
        XCTAssertTrue(found.origin.contains("X.509 certificate /etc/fleet/device.pem"), found.origin)
        XCTAssertThrowsError(try ApplicationDefaultCredentials.find(
            environment: ["GOOGLE_APPLICATION_CREDENTIALS": "/adc.json", "HOME": "/elsewhere"], readFile: { files[$0] }, probeMetadataServer: { false })
        ) { error in
            XCTAssertTrue("\(error)".contains("/elsewhere/.config/gcloud/certificate_config.json, which cannot be read"), "\(error)")
        }
    }

    func testTheSubjectTokenIsTheLeafThenTheTrustChainAsGooglesLibrariesBuildIt() throws {
        let leaf: [UInt8] = [1, 2, 3], intermediate: [UInt8] = [4, 5], root: [UInt8] = [6]
        func token(_ chain: [[UInt8]]) -> Result<String, ProxyFailure> {
            WorkloadCertificate.subjectToken(leaf: leaf, chain: chain, trustChainPath: "/chain.pem")
        }
        XCTAssertEqual(try token([]).get(), #"["AQID"]"#)
        XCTAssertEqual(try token([intermediate, root]).get(), #"["AQID","BAU=","Bg=="]"#)
        XCTAssertEqual(try token([leaf, intermediate]).get(), #"["AQID","BAU="]"#, "a chain that starts with the leaf")
        guard case .failure(let failure) = token([intermediate, leaf]) else { return XCTFail("the leaf inside the chain") }
        XCTAssertTrue(failure.message.contains("/chain.pem has the leaf certificate after its start"), failure.message)
    }

    func testPEMThatIsNotACertificateIsNeitherAChainNorAClientCertificate() {
        XCTAssertEqual(X509DER.certificates(pem: []), [])
        XCTAssertNil(X509DER.certificates(pem: Array("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n".utf8)))
        XCTAssertThrowsError(try ClientCertificate(certificatePEM: Array("no pem".utf8), keyPEM: [], certificateFile: "/c.pem", keyFile: "/k.pem")) {
            XCTAssertEqual(($0 as? ClientCertificateError)?.kind, .unusable)
            XCTAssertTrue("\($0)".contains("/c.pem holds no PEM certificate"), "\($0)")
        }
    }
}
