@testable import FleetTokenProxy
@testable import FleetTokenProxyStandIns
import Foundation
import XCTest

/// `external_account` with an executable source, pluggable auth (docs/CONTRACT.md §4a): the
/// program the file names is run, never through a shell, with the exchange's variables; its
/// answer is exchanged at the stand-in STS; its output file is used while it has not expired;
/// a program that fails, hangs or says no is an error in the client's terms without its output.
final class ExecutableSourceTests: GoogleCredentialsTestCase {
    var runsFile: String { directory + "/runs" }
    var runs: Int { ((try? String(contentsOfFile: runsFile, encoding: .utf8)) ?? "").split(separator: "\n").count }

    /// A program that counts its runs, records its environment, then runs `body`.
    func program(_ body: String) throws -> String {
        let path = directory + "/id-token"
        let text = "#!/bin/sh\necho run >> '\(runsFile)'\nenv > '\(directory!)/env'\n\(body)\n"
        _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o700])
        return path
    }

    /// The answer a program prints for a valid subject token, expiring in `lifetime` seconds.
    func answer(lifetime: Double = 600) -> String {
        let token = standIns.sync { self.google.subjectToken() }
        return JSONish.object([
            "version": .number(1), "success": .bool(true), "token_type": .string("urn:ietf:params:oauth:token-type:jwt"),
            "id_token": .string(token), "expiration_time": .number((Date().timeIntervalSince1970 + lifetime).rounded()),
        ]).jsonText
    }

    func environment(command: String, outputFile: String? = nil, timeoutMillis: Int = 5000, allow: Bool = true) -> [String: String] {
        var executable: [String: JSONish] = ["command": .string(command), "timeout_millis": .number(Double(timeoutMillis))]
        if let outputFile { executable["output_file"] = .string(outputFile) }
        let file = JSONish.object([
            "type": .string("external_account"), "audience": .string(standIns.sync { self.google.poolAudience }),
            "subject_token_type": .string("urn:ietf:params:oauth:token-type:jwt"), "token_url": .string("http://\(standIns.googleAddress)/v1/token"),
            "credential_source": .object(["executable": .object(executable)]),
        ]).jsonText
        let path = directory + "/external.json"
        _ = FileManager.default.createFile(atPath: path, contents: Data(file.utf8))
        var environment = ["GOOGLE_APPLICATION_CREDENTIALS": path]
        if allow { environment["GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES"] = "1" }
        return environment
    }

    func testTheProgramsTokenIsExchangedAndItGetsTheExchangesVariablesWithoutAShell() throws {
        let path = try program("cat <<'EOF'\n\(answer())\nEOF")
        let marker = directory + "/ran-by-a-shell"
        let sidecar = try sidecar(["--signer", "adc"], environment: environment(command: "\(path) --flag ';touch \(marker)' ;touch \(marker)"))
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 200, sidecar.log)
        XCTAssertEqual(runs, 1)
        XCTAssertEqual(stsRequests, 1)
        XCTAssertFalse(FileManager.default.fileExists(atPath: marker), "`;touch` was an argument, not a command")
        let env = try String(contentsOfFile: directory + "/env", encoding: .utf8)
        XCTAssertTrue(env.contains("GOOGLE_EXTERNAL_ACCOUNT_AUDIENCE=" + standIns.sync { self.google.poolAudience }), env)
        XCTAssertTrue(env.contains("GOOGLE_EXTERNAL_ACCOUNT_TOKEN_TYPE=urn:ietf:params:oauth:token-type:jwt"), env)
        XCTAssertTrue(env.contains("GOOGLE_EXTERNAL_ACCOUNT_INTERACTIVE=0"), env)
        XCTAssertTrue(env.contains("HOME=\(directory!)"), "the sidecar's own environment too")
        XCTAssertFalse(sidecar.log.contains("eyJ"), "no subject token in the log")
    }

    func testAnOutputFileThatHasNotExpiredIsUsedInsteadOfRunningTheProgramAgain() throws {
        let output = directory + "/id-token.json"
        let path = try program("cat > \"$GOOGLE_EXTERNAL_ACCOUNT_OUTPUT_FILE\" <<'EOF'\n\(answer())\nEOF")
        let sidecar = try sidecar(["--signer", "adc"], environment: environment(command: path, outputFile: output))
        defer { sidecar.stop() }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 200, "it printed nothing: its output file is read" + sidecar.log)
        standIns.sync { self.standIns.fleetEngine.unauthenticatedCalls = 1 }
        XCTAssertEqual(try call(sidecar, "/v1/providers/p/vehicles/v1").status, 200, sidecar.log)
        XCTAssertEqual(stsRequests, 2, "a second exchange")
        XCTAssertEqual(runs, 1, "from the output file, without running the program")
    }

    func testAProgramThatFailsHangsOrSaysNoIsAnErrorWithoutItsOutput() throws {
        let path = try program("echo 'secret-output eyJhbGci'; exit 7")
        let sidecar = try sidecar(["--signer", "adc", "--provider-backoff-max", "0.2", "--provider-timeout", "10"],
                                  environment: environment(command: path))
        defer { sidecar.stop() }
        let failed = try call(sidecar, "/v1/providers/p/vehicles/v1")
        XCTAssertEqual(failed.status, 503, failed.body)
        XCTAssertTrue(failed.body.contains("the executable \(path) exited with status 7"), failed.body)
        XCTAssertFalse((failed.body + sidecar.log).contains("secret-output"), "what it printed is not shown")
        _ = try program(#"echo '{"version": 1, "success": false, "code": "401", "message": "Caller not authorized."}'"#)
        usleep(300_000)
        let refused = try call(sidecar, "/v1/providers/p/vehicles/v2")
        XCTAssertEqual(refused.status, 403, refused.body)
        XCTAssertTrue(refused.body.contains("answered unsuccessfully: 401: Caller not authorized."), refused.body)
        XCTAssertEqual(stsRequests, 0)
    }

    func testAProgramPastItsTimeoutIsKilledAndTheCallUnavailable() throws {
        let path = try program("sleep 30")
        let sidecar = try sidecar(["--signer", "adc", "--provider-timeout", "10"], environment: environment(command: path, timeoutMillis: 5000))
        defer { sidecar.stop() }
        let answer = try call(sidecar, "/v1/providers/p/vehicles/v1")
        XCTAssertEqual(answer.status, 503, answer.body)
        XCTAssertTrue(answer.body.contains("did not finish within 5 s and was killed"), answer.body)
    }

    func testWithoutTheVariableThatAllowsExecutablesStartUpStops() throws {
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("FLEET_TOKEN_PROXY_") && $0.key != "GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES" }
        env.merge(environment(command: try program("exit 0"), allow: false)) { $1 }
        env["HOME"] = directory
        let result = try runCommand(SidecarProcess.binary.path, ["serve", "--listen", "127.0.0.1:0", "--signer", "adc",
                                                                 "--upstream", "http://\(standIns.fleetEngineAddress)"], environment: env)
        XCTAssertEqual(result.status, 2, result.stderr)
        XCTAssertTrue(result.stderr.contains("runs only with GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES=1"), result.stderr)
        XCTAssertEqual(runs, 0, "never run")
    }
}
