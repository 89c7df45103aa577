@testable import FleetTokenProxy
@testable import FleetTokenProxyStandIns
import Foundation
import XCTest

/// Every kind of Application Default Credentials in every mode that uses them (docs/CONTRACT.md
/// §4a), against the stand-ins: `--signer adc` (the ADC token itself), `--signer iam:EMAIL` (IAM
/// signJwt authorised by it) and `--provider-id-token-audience` (an ID token for the provider,
/// whose JWT then goes on). Each cell is one sidecar started from nothing but its environment:
/// the stand-in Fleet Engine's verdict on a vehicle's call (or the start-up refusal), the time
/// from spawning the process to `READY=1` on its `NOTIFY_SOCKET`, and the first call's time as
/// curl measures it (every token of the chain fetched then, from stand-ins that run in this
/// test's debug build, on one thread). The stand-in Google serves TLS and asks for client
/// certificates, as the mTLS STS does; the metadata server is served over plain HTTP too.
///
/// `scripts/credential-matrix` runs this test and prints the table (written to
/// `CREDENTIAL_MATRIX_OUT` when set), each cell's times the median of `CREDENTIAL_MATRIX_RUNS`
/// sidecars; the cells Google's libraries also refuse are expected.
final class CredentialMatrixTests: GoogleCredentialsTestCase {
    static let audience = "https://token-provider-abc123-uc.a.run.app"
    /// The stand-in Google over plain HTTP: the metadata server is asked without TLS.
    var plainGoogle = ""

    override func makeStandIns() throws -> StandInHost {
        try makeMutualTLSStandIns()
    }

    enum Mode: CaseIterable {
        case adc, iam, idToken

        var heading: String {
            switch self {
            case .adc: return "`--signer adc`"
            case .iam: return "`--signer iam:EMAIL`"
            case .idToken: return "`--provider-id-token-audience`"
            }
        }
    }

    /// A kind of credentials: its environment (written when its turn comes: the files share
    /// paths), the flags it needs, and the modes it cannot serve, as Google's libraries cannot.
    struct Credentials {
        var name: String
        var flags: [String] = []
        var refusedFor: Set<Mode> = []
        var environment: () throws -> [String: String]
    }

    struct Cell {
        var verdict: String
        var accepted: Bool
        var readyMilliseconds: Double
        var firstCallMilliseconds: Double?

        var text: String {
            let timing = firstCallMilliseconds.map { cFormat("READY %.0f ms, first call %.0f ms", readyMilliseconds, $0) }
                ?? cFormat("exit 2 after %.0f ms", readyMilliseconds)
            return "\(verdict); \(timing)"
        }
    }

    func testEveryKindOfCredentialsInEveryModeAsGooglesLibrariesServeThem() throws {
        let google = google
        let audience = Self.audience
        standIns.sync { self.standIns.provider.bearerCheck = { google.isIDToken($0, for: audience) } }
        let port = try freePort()
        try standIns.serveGoogle(onPort: port)
        plainGoogle = "127.0.0.1:\(port)"
        let (aws, imds) = try standIns.serveAWS()
        standIns.sync { self.google.awsCredentials = [aws.credentials.accessKeyID: aws.credentials] }
        let userEndpoint = ["--oauth-token-endpoint", self.google.tokenURI]
        let rows: [Credentials] = [
            Credentials(name: "`service_account` key file") { try self.keyFileEnvironment() },
            Credentials(name: "`authorized_user` (gcloud login)", flags: userEndpoint, refusedFor: [.idToken]) {
                try self.writeGcloudUserFile()
                return [:]
            },
            Credentials(name: "`impersonated_service_account`", flags: userEndpoint) { try self.impersonationEnvironment() },
            Credentials(name: "`external_account` file (OIDC), no impersonation", refusedFor: [.idToken]) {
                try self.externalAccountEnvironment()
            },
            Credentials(name: "`external_account` file (OIDC)") { try self.externalAccountEnvironment(impersonate: true) },
            Credentials(name: "`external_account` URL (JSON)") {
                try self.externalAccountEnvironment(impersonate: true, source: .object([
                    "url": .string("\(self.googleOrigin)/oidc/token"), "headers": .object(["Metadata": .string("True")]),
                    "format": .object(["type": .string("json"), "subject_token_field_name": .string("access_token")]),
                ]))
            },
            Credentials(name: "`external_account` executable") { try self.executableEnvironment() },
            Credentials(name: "`external_account` AWS (IMDSv2)") { try self.awsEnvironment(imds: imds, impersonate: true) },
            Credentials(name: "`external_account` X.509 certificate") { try self.certificateEnvironment(impersonate: true) },
            Credentials(name: "metadata server") { ["GCE_METADATA_HOST": self.plainGoogle] },
        ]
        var table = ["| credentials | " + Mode.allCases.map(\.heading).joined(separator: " | ") + " |",
                     "|---|" + Mode.allCases.map { _ in "---|" }.joined()]
        for row in rows {
            var cells: [String] = []
            for mode in Mode.allCases {
                let cell = try median(of: (0..<runs).map { _ in try measure(row, mode) })
                let refused = row.refusedFor.contains(mode)
                XCTAssertEqual(cell.accepted, !refused, "\(row.name), \(mode): \(cell.verdict)")
                if refused { XCTAssertNil(cell.firstCallMilliseconds, "\(row.name), \(mode): refused at start, as Google's libraries refuse it") }
                cells.append(cell.text)
            }
            table.append("| \(row.name) | " + cells.joined(separator: " | ") + " |")
        }
        let text = table.joined(separator: "\n") + "\n"
        print(text)
        if let out = ProcessInfo.processInfo.environment["CREDENTIAL_MATRIX_OUT"], !out.isEmpty {
            try text.write(toFile: out, atomically: true, encoding: .utf8)
        }
    }

    /// Sidecars started for each cell: `CREDENTIAL_MATRIX_RUNS`, else 1.
    var runs: Int { max(1, Int(ProcessInfo.processInfo.environment["CREDENTIAL_MATRIX_RUNS"] ?? "") ?? 1) }

    /// The runs' verdict (the first's; they must agree) and their median times (the lower
    /// middle one of an even number).
    func median(of cells: [Cell]) -> Cell {
        var cell = cells[0]
        for other in cells.dropFirst() { XCTAssertEqual(other.accepted, cell.accepted, "\(cell.verdict) / \(other.verdict)") }
        func middle(_ values: [Double]) -> Double? { values.isEmpty ? nil : values.sorted()[(values.count - 1) / 2] }
        cell.readyMilliseconds = middle(cells.map(\.readyMilliseconds)) ?? 0
        cell.firstCallMilliseconds = middle(cells.compactMap(\.firstCallMilliseconds))
        return cell
    }

    /// One sidecar with `row`'s credentials in `mode`: READY (or its exit), then one vehicle's call.
    func measure(_ row: Credentials, _ mode: Mode) throws -> Cell {
        // gcloud's file in HOME would come before the metadata server: only its row has one.
        try? FileManager.default.removeItem(atPath: directory + "/.config/gcloud/application_default_credentials.json")
        var environment = try row.environment()
        environment["SSL_CERT_FILE"] = pki.path("server-ca.pem")
        let notify = try NotifyListener()
        environment["NOTIFY_SOCKET"] = notify.name
        var flags = row.flags
        switch mode {
        case .adc: flags += ["--signer", "adc"]
        case .iam: flags += ["--signer", "iam:\(account)", "--iam-endpoint", googleOrigin]
        case .idToken: flags += ["--provider-id-token-audience", Self.audience]
        }
        let acceptedBefore = fleetEngineStatistics.accepted
        let start = Date()
        let sidecar = try sidecar(flags, environment: environment, provider: mode == .idToken, waitForListening: false)
        defer { sidecar.stop() }
        var ready: [Substring] = []
        while !ready.contains("READY=1") && sidecar.process.isRunning && Date().timeIntervalSince(start) < 10 {
            ready = notify.next(timeout: 0.02)?.split(separator: "\n") ?? []
        }
        let readyMilliseconds = Date().timeIntervalSince(start) * 1000
        // READY comes with the address it serves on.
        guard ready.contains("READY=1"), let status = ready.first(where: { $0.hasPrefix("STATUS=serving on ") }) else {
            _ = sidecar.waitForExit(timeout: 5)
            let line = sidecar.log.split(separator: "\n").first.map(String.init) ?? "no line"
            let shown = line.replacingOccurrences(of: directory + "/", with: "")
            return Cell(verdict: "refused at start: " + Self.shortened(shown), accepted: false, readyMilliseconds: readyMilliseconds)
        }
        let address = status.dropFirst("STATUS=serving on ".count)
        // curl times the call itself: its own start-up is not the sidecar's.
        let out = try curl(["-w", "\n%{http_code} %{time_total}", "http://\(address)/v1/providers/p/vehicles/v-matrix"]).stdout
        let written = (out.split(separator: "\n").last ?? "").split(separator: " ")
        let code = written.first.flatMap { Int($0) } ?? 0
        let firstCall = (written.last.flatMap { Double($0) } ?? 0) * 1000
        let accepted = code == 200 && fleetEngineStatistics.accepted == acceptedBefore + 1
        let verdict = accepted ? "accepted" : "refused: HTTP \(code) " + Self.shortened(String(out.split(separator: "\n").first ?? ""))
        return Cell(verdict: verdict, accepted: accepted, readyMilliseconds: readyMilliseconds, firstCallMilliseconds: firstCall)
    }

    /// A pluggable-auth program that prints an answer with a fresh OIDC token.
    func executableEnvironment() throws -> [String: String] {
        let answer = JSONish.object([
            "version": .number(1), "success": .bool(true), "token_type": .string("urn:ietf:params:oauth:token-type:jwt"),
            "id_token": .string(standIns.sync { self.google.subjectToken() }),
            "expiration_time": .number((Date().timeIntervalSince1970 + 3600).rounded()),
        ]).jsonText
        let program = directory + "/id-token"
        _ = FileManager.default.createFile(atPath: program, contents: Data("#!/bin/sh\nprintf '%s' '\(answer)'\n".utf8),
                                           attributes: [.posixPermissions: 0o700])
        var environment = try externalAccountEnvironment(impersonate: true, source: .object(["executable": .object(["command": .string(program)])]))
        environment["GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES"] = "1"
        return environment
    }

    /// A line for a table cell: the program's name and the log's metadata left out, cut short.
    static func shortened(_ line: String) -> String {
        var text = line
        for prefix in ["fleet-token-proxy serve: ", "fleet-token-proxy: "] where text.hasPrefix(prefix) { text.removeFirst(prefix.count) }
        text = text.replacingOccurrences(of: "|", with: "/")
        return text.count > 150 ? String(text.prefix(147)) + "..." : text
    }
}
