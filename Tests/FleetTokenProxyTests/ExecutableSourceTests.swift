@testable import FleetTokenProxy
import Foundation
@testable import ParserInvariants
import XCTest

/// Pluggable auth (docs/CONTRACT.md §4a): the executable's command split into words without a
/// shell, its settings, the gate that allows it, its answers, and the runner's time bound.
final class ExecutableSourceTests: XCTestCase {
    func testTheCommandIsSplitAsAShellSplitsWordsWithoutExpandingAnything() {
        XCTAssertEqual(ExecutableCommand.split("/bin/t  --a 'b c' \"d \\\"e\\\" \\f\" g\\ h"), ["/bin/t", "--a", "b c", "d \"e\" \\f", "g h"])
        XCTAssertEqual(ExecutableCommand.split("/bin/t $HOME;rm -rf / *"), ["/bin/t", "$HOME;rm", "-rf", "/", "*"], "nothing is expanded or run")
        XCTAssertEqual(ExecutableCommand.split("/bin/t ''"), ["/bin/t", ""])
        XCTAssertNil(ExecutableCommand.split("/bin/t 'open"))
        XCTAssertNil(ExecutableCommand.split("/bin/t \\"))
    }

    func file(_ executable: JSONish) -> [UInt8] {
        Array(JSONish.object([
            "type": .string("external_account"), "audience": .string("//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/o"),
            "subject_token_type": .string("urn:ietf:params:oauth:token-type:jwt"), "token_url": .string("https://sts.googleapis.com/v1/token"),
            "credential_source": .object(["executable": executable]),
        ]).jsonText.utf8)
    }

    func testAnExecutableIsTakenWithItsTimeoutAndOutputFileOnlyWhenTheEnvironmentAllowsIt() throws {
        let bytes = file(.object(["command": .string("/bin/t --x"), "timeout_millis": .number(5000), "output_file": .string("/run/t.json")]))
        let find = { (environment: [String: String]) in
            try ApplicationDefaultCredentials.find(environment: environment.merging(["GOOGLE_APPLICATION_CREDENTIALS": "/adc.json"]) { $1 },
                                                   readFile: { $0 == "/adc.json" ? bytes : nil }, probeMetadataServer: { false })
        }
        XCTAssertThrowsError(try find([:])) { error in
            XCTAssertTrue("\(error)".contains("runs only with GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES=1"), "\(error)")
        }
        XCTAssertThrowsError(try find(["GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES": "true"]), "only 1 allows it")
        let credentials = try find(["GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES": "1", "PATH": "/usr/bin"])
        guard case .externalAccount(let account) = credentials.source, case .executable(let command) = account.subjectTokenSource else {
            return XCTFail("an executable source")
        }
        XCTAssertEqual(command.arguments, ["/bin/t", "--x"])
        XCTAssertEqual(command.timeout, 5)
        XCTAssertEqual(command.outputFile, "/run/t.json")
        XCTAssertEqual(command.environment["PATH"], "/usr/bin", "the program gets the sidecar's environment")
        XCTAssertFalse(credentials.origin.contains("--x"), "the arguments are not shown: \(credentials.origin)")
    }

    func testABadCommandOrTimeoutIsRefusedByName() {
        for (executable, named) in [(JSONish.object(["command": .string("/bin/t 'open")]), "command"),
                                    (.object(["command": .string("/bin/t"), "timeout_millis": .number(1000)]), "timeout_millis"),
                                    (.object(["command": .string("")]), "command"), (.string("/bin/t"), "executable")] {
            XCTAssertThrowsError(try ApplicationDefaultCredentials.parse(file(executable), file: "f")) { error in
                XCTAssertTrue("\(error)".contains(named), "\(error)")
            }
        }
    }

    // MARK: Its answers

    let now = 1_767_225_600.0

    func answer(_ members: [String: JSONish]) -> [UInt8] {
        var all: [String: JSONish] = ["version": .number(1), "success": .bool(true), "token_type": .string("urn:ietf:params:oauth:token-type:jwt"),
                                      "id_token": .string("eyJhbGciOiJSUzI1NiJ9.subject.sig"), "expiration_time": .number(now + 600)]
        all.merge(members) { $1 }
        return Array(JSONish.object(all.filter { $0.value != .null }).jsonText.utf8)
    }

    func testASuccessfulAnswerGivesItsTokenAndExpiry() throws {
        XCTAssertEqual(try ExecutableResponse.parse(answer([:]), from: "x", wallNow: now).get(),
                       ExecutableResponse.Token(value: "eyJhbGciOiJSUzI1NiJ9.subject.sig", expiresAt: now + 600))
        let saml = answer(["token_type": .string("urn:ietf:params:oauth:token-type:saml2"), "saml_response": .string("PHNhbWw+"), "expiration_time": .null])
        XCTAssertEqual(try ExecutableResponse.parse(saml, from: "x", wallNow: now).get(), ExecutableResponse.Token(value: "PHNhbWw+", expiresAt: nil))
    }

    func testAnUnsuccessfulAnswerIsARefusalInItsOwnWordsAndABrokenOneUnusable() {
        let refused = answer(["success": .bool(false), "code": .string("401"), "message": .string("Caller not authorized.")])
        guard case .failure(let failure) = ExecutableResponse.parse(refused, from: "the executable /bin/t", wallNow: now) else { return XCTFail() }
        XCTAssertEqual(failure.httpStatus, 403)
        XCTAssertEqual(failure.message, "the executable /bin/t answered unsuccessfully: 401: Caller not authorized.")
        for broken in [answer(["version": .number(2)]), answer(["expiration_time": .number(now - 1)]), answer(["success": .string("true")]),
                       answer(["token_type": .string("urn:ietf:params:oauth:token-type:access_token")]), answer(["id_token": .string("a b")])] {
            guard case .failure(let failure) = ExecutableResponse.parse(broken, from: "x", wallNow: now) else { return XCTFail("accepted") }
            XCTAssertEqual(failure.httpStatus, 502)
            XCTAssertFalse(failure.message.contains("subject.sig"), failure.message)
        }
    }

    func testTheInvariantCatchesAnotherTokenOrExpiryOrARefusalThatRepeatsTheToken() {
        let members: [String: JSONish] = ["version": .number(1), "success": .bool(true), "token_type": .string("urn:ietf:params:oauth:token-type:jwt"),
                                          "id_token": .string("eyJhbGciOiJSUzI1NiJ9.subject.sig")]
        XCTAssertNoThrow(try ExecutableResponseInvariant.checkAccepted(.init(value: "eyJhbGciOiJSUzI1NiJ9.subject.sig", expiresAt: nil), answer: members))
        XCTAssertThrowsError(try ExecutableResponseInvariant.checkAccepted(.init(value: "other", expiresAt: nil), answer: members))
        XCTAssertThrowsError(try ExecutableResponseInvariant.checkAccepted(.init(value: "eyJhbGciOiJSUzI1NiJ9.subject.sig", expiresAt: now + 1), answer: members))
        XCTAssertThrowsError(try ExecutableResponseInvariant.checkRefusal("bad eyJhbGciOiJSUzI1NiJ9.subject.sig", answer: members))
    }

    // MARK: The runner

    func script(_ body: String) throws -> String {
        let path = NSTemporaryDirectory() + "ftp-exe-\(UUID().uuidString.prefix(8)).sh"
        _ = FileManager.default.createFile(atPath: path, contents: Data("#!/bin/sh\n\(body)\n".utf8), attributes: [.posixPermissions: 0o700])
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        return path
    }

    func testTheRunnerGivesTheOutputAndStatusAndPassesArgumentsAndEnvironmentAsGiven() throws {
        let path = try script(#"printf '%s|%s|%s' "$1" "$2" "$X"; echo err >&2; exit 3"#)
        let outcome = ExecutableRunner.run([path, "a b", "$X;c"], environment: ["X": "x"], timeout: 5)
        XCTAssertEqual(outcome, .exited(status: 3, output: Array("a b|$X;c|xerr\n".utf8)))
    }

    func testTheProgramGetsNoDescriptorOfTheSidecarsButItsOutput() throws {
        let fd = open("/dev/null", O_RDONLY)  // no O_CLOEXEC: a descriptor a program would inherit
        defer { close(fd) }
        XCTAssertGreaterThan(fd, 2)
        let path = try script("[ -e /proc/$$/fd/\(fd) ] && echo leaked || echo closed")
        XCTAssertEqual(ExecutableRunner.run([path], environment: [:], timeout: 5), .exited(status: 0, output: Array("closed\n".utf8)))
    }

    func testTheProgramGetsSIGPIPEAtItsDefaultThoughTheSidecarIgnoresIt() throws {
        let previous = signal(SIGPIPE, SIG_IGN)
        defer { signal(SIGPIPE, previous) }
        let path = try script("grep '^SigIgn' /proc/$$/status")
        guard case .exited(0, let output) = ExecutableRunner.run([path], environment: [:], timeout: 5),
              let mask = UInt64(String(decoding: output, as: UTF8.self).split(separator: "\t").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "", radix: 16)
        else { return XCTFail("no SigIgn line") }
        XCTAssertEqual(mask & (1 << (UInt64(SIGPIPE) - 1)), 0, "SIGPIPE is not ignored in the program")
    }

    func testTheRunnerKillsAProgramPastItsTimeoutAndReportsOneThatCannotStart() throws {
        let path = try script("sleep 30")
        let started = Date()
        XCTAssertEqual(ExecutableRunner.run([path], environment: [:], timeout: 0.5), .timedOut)
        XCTAssertLessThan(Date().timeIntervalSince(started), 5)
        XCTAssertEqual(ExecutableRunner.run(["/nonexistent/program"], environment: [:], timeout: 1), .couldNotStart(ENOENT))
    }
}
