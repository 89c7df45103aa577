@testable import FleetTokenProxy
@testable import FleetTokenProxyStandIns
import Foundation
import XCTest

/// An `external_account` with an X.509 `credential_source` (docs/CONTRACT.md §4a): a device's
/// certificate (signed by an intermediate, which the trust chain file carries) is the subject
/// token and is presented over mutual TLS to the stand-in STS, which serves TLS, asks every
/// client for a certificate, and takes the chain only when its leaf is the certificate the
/// connection presented and it verifies against the pool's trust anchor. No key of Google's
/// anywhere on the sidecar's side: the device's own key only opens the TLS connection.
final class X509SourceTests: GoogleCredentialsTestCase {
    override func makeStandIns() throws -> StandInHost {
        try makeMutualTLSStandIns()
    }

    /// The base64 body of a PEM file: what a leaked key would look like in a log.
    func pemBody(_ file: String) throws -> String {
        try String(contentsOfFile: pki.path(file), encoding: .utf8).split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
    }

    func testWithAdcFleetEngineGetsTheFederatedTokenOfTheCertificatePresentedOverMutualTLS() throws {
        let sidecar = try sidecar(["--signer", "adc"], environment: try certificateEnvironment())
        defer { sidecar.stop() }
        try assertOneExchangeServesEveryEntity(sidecar)
        XCTAssertEqual(standIns.sync { self.google.lastSTSClientCertificate }, try pki.der("device"), "STS saw the device's certificate")
        XCTAssertEqual(standIns.sync { self.google.lastSTSForm["subject_token_type"] }, CertificateCredentialSource.subjectTokenType)
        XCTAssertTrue(sidecar.log.contains("X.509 certificate \(pki.path("device.pem"))"), sidecar.log)
        XCTAssertFalse(sidecar.log.contains(try pemBody("device.key").prefix(40)), "no key in the log")
        assertNoTokenIn(sidecar.log)
    }

    func testThroughImpersonationIAMSignsAndTheProviderGetsAnIDTokenBothOverTheCertificate() throws {
        let audience = "https://token-provider-abc123-uc.a.run.app"
        let google = google
        standIns.sync { self.standIns.provider.bearerCheck = { google.isIDToken($0, for: audience) } }
        // gcloud's default certificate config, in HOME.
        let sidecar = try sidecar(["--signer", "vehicle=iam:\(account)", "--iam-endpoint", googleOrigin, "--provider-id-token-audience", audience],
                                  environment: try certificateEnvironment(impersonate: true, useDefaultConfig: true), provider: true)
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 200, "signJwt through the impersonated account" + sidecar.log)
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/trips/t1").status, 200, "the provider took the ID token" + sidecar.log)
        XCTAssertEqual(standIns.sync { self.google.signJwtRequests }, 1)
        XCTAssertEqual(standIns.sync { self.google.generateIdTokenRequests }, 1)
        XCTAssertEqual(standIns.sync { self.google.lastImpersonationClientCertificate }, try pki.der("device"),
                       "generateAccessToken went over mutual TLS too, as Google's libraries send it")
        let bearer = try XCTUnwrap(standIns.sync { self.google.lastSignJwtBearer })
        XCTAssertTrue(standIns.sync { self.google.impersonatedTokens.contains(bearer) }, "signJwt was authorised by the impersonated token")
        XCTAssertEqual(fleetEngineStatistics.rejected, 0)
    }

    func testACertificateThePoolDoesNotTrustIsPermissionDeniedWithSTSsOwnText() throws {
        let sidecar = try sidecar(["--signer", "adc"], environment: try certificateEnvironment(device: "rogue-device", trustChain: false))
        defer { sidecar.stop() }
        let refused = try call(sidecar, "/v1/providers/p/vehicles/v1")
        XCTAssertEqual(refused.status, 403, refused.body)
        XCTAssertTrue(refused.body.contains("PERMISSION_DENIED") && refused.body.contains("does not verify against the pool's trust store"), refused.body)
        XCTAssertEqual(standIns.sync { self.google.lastSTSClientCertificate }, try pki.der("rogue-device"))
        XCTAssertEqual(fleetEngineStatistics.accepted, 0)
    }

    func testWithoutTheTrustChainTheDevicesIntermediateIsMissingAndSTSRefuses() throws {
        let sidecar = try sidecar(["--signer", "adc"], environment: try certificateEnvironment(trustChain: false))
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 403, sidecar.log)
    }

    func testARenewedCertificateIsPresentedAndSentFromTheNextExchangeOn() throws {
        let sidecar = try sidecar(["--signer", "adc", "--provider-backoff-max", "0.2"], environment: try certificateEnvironment())
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 200, sidecar.log)
        // The certificate and key files are replaced in place, as a renewal agent does.
        for suffix in [".pem", ".key"] {
            try FileManager.default.removeItem(atPath: pki.path("device" + suffix))
            try FileManager.default.copyItem(atPath: pki.path("device-renewed" + suffix), toPath: pki.path("device" + suffix))
        }
        // Fleet Engine's 401 drops the federated token: the next exchange reads the files again.
        standIns.sync { self.standIns.fleetEngine.unauthenticatedCalls = 1 }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 200, sidecar.log)
        XCTAssertEqual(stsRequests, 2)
        XCTAssertEqual(standIns.sync { self.google.lastSTSClientCertificate }, try pki.der("device-renewed"))
    }

    func testAMissingKeyAMismatchedKeyNoCertificateConfigOrAPlainTokenURLStopsStartUpInOneLine() throws {
        // Each credentials file is written just before its start: they share a path.
        let cases: [(String, () throws -> [String: String], String)] = [
            ("a missing key file", { try self.certificateEnvironment(key: "absent") }, "the private key file \(pki.path("absent.key")) cannot be read"),
            ("another certificate's key", { try self.certificateEnvironment(key: "rogue-device") },
             "the private key in \(pki.path("rogue-device.key")) is not the key of the certificate in \(pki.path("device.pem"))"),
            ("no certificate config", {
                let environment = try self.certificateEnvironment(useDefaultConfig: true)
                try FileManager.default.removeItem(atPath: self.directory + "/.config/gcloud/certificate_config.json")
                return environment
            }, "certificate config \(directory!)/.config/gcloud/certificate_config.json, which cannot be read"),
            ("an http token_url", { try self.certificateEnvironment(tokenURL: "http://127.0.0.1:9/v1/token") }, "token_url that is not https"),
        ]
        for (what, environment, expected) in cases {
            var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("FLEET_TOKEN_PROXY_") }
            env.merge(try environment()) { $1 }
            env["HOME"] = directory
            env["GOOGLE_API_CERTIFICATE_CONFIG"] = ""
            env["CLOUDSDK_CONFIG"] = ""
            let result = try runCommand(SidecarProcess.binary.path, [
                "serve", "--listen", "127.0.0.1:0", "--upstream", "http://\(standIns.fleetEngineAddress)", "--signer", "adc",
            ], environment: env)
            XCTAssertEqual(result.status, 2, what + ": " + result.stderr)
            XCTAssertTrue(result.stderr.contains(expected), what + ": " + result.stderr)
            XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, what + ": one line")
            XCTAssertFalse(result.stderr.contains(try pemBody("device.key").prefix(40)), "no key in the line")
        }
    }
}
