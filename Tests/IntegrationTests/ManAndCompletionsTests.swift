import Foundation
import XCTest

/// fleet-token-proxy(1) and the shell completions are generated from the command line's own
/// definition (scripts/generate-man-and-completions, which scripts/package runs), so every flag
/// `serve --help` lists is in the man page and completes in bash. Tests/systemd/run checks that
/// the package installs them and lintian stays clean.
final class ManAndCompletionsTests: XCTestCase {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    var root: URL!

    override func setUpWithError() throws {
        // swift-argument-parser's generator, built beside the binary (scripts/test builds it: a
        // test cannot run `swift build` while `swift test` holds the build directory).
        let tool = SidecarProcess.binary.deletingLastPathComponent().appendingPathComponent("generate-manual")
        guard FileManager.default.isExecutableFile(atPath: tool.path) else {
            XCTFail("\(tool.path) is missing: swift build --product generate-manual")
            throw SidecarError("no generate-manual")
        }
        root = FileManager.default.temporaryDirectory.appendingPathComponent("ftp-man-\(UUID().uuidString.prefix(8))")
        var environment = ProcessInfo.processInfo.environment
        environment["GENERATE_MANUAL"] = tool.path
        let run = try runCommand(Self.repository.appendingPathComponent("scripts/generate-man-and-completions").path,
                                 [root.path, SidecarProcess.binary.path], environment: environment)
        XCTAssertEqual(run.status, 0, run.stderr)
    }

    override func tearDown() {
        if let root { try? FileManager.default.removeItem(at: root) }
    }

    /// Every long flag `serve --help` prints, `--check` and `--signer` among them.
    func serveFlags() throws -> Set<String> {
        let help = try runCommand(SidecarProcess.binary.path, ["serve", "--help"]).stdout
        let flags = help.matches(of: /--[a-z][a-z0-9-]+/).map { String($0.output) }
        XCTAssertTrue(flags.contains("--check") && flags.contains("--signer"), help)
        return Set(flags)
    }

    func testTheManPageRendersWithoutWarningsAndListsEveryServeFlag() throws {
        let page = root.appendingPathComponent("usr/share/man/man1/fleet-token-proxy.1.gz").path
        var environment = ProcessInfo.processInfo.environment
        environment["MANWIDTH"] = "300" // one flag a line, never hyphenated
        let man = try runCommand("/usr/bin/man", ["--warnings", "-E", "UTF-8", "-l", page], environment: environment)
        XCTAssertEqual(man.status, 0, man.stderr)
        XCTAssertEqual(man.stderr, "", "groff warnings")
        XCTAssertTrue(man.stdout.contains("FLEET-TOKEN-PROXY(1)"), man.stdout)
        for flag in try serveFlags() where flag != "--help" {
            XCTAssertTrue(man.stdout.contains(flag), "\(flag) is not in the man page")
        }
    }

    func testBashCompletesEveryServeFlag() throws {
        let script = root.appendingPathComponent("usr/share/bash-completion/completions/fleet-token-proxy").path
        // What bash-completion does on TAB after `fleet-token-proxy serve --`.
        let line = "fleet-token-proxy serve --"
        let bash = try runCommand("/bin/bash", ["-c", """
            source "$1"; COMP_LINE="$2"; COMP_POINT=${#COMP_LINE}; COMP_WORDS=(fleet-token-proxy serve --); COMP_CWORD=2
            _fleet-token-proxy fleet-token-proxy -- serve; printf '%s\\n' "${COMPREPLY[@]}"
            """, "bash", script, line])
        XCTAssertEqual(bash.status, 0, bash.stderr)
        let offered = Set(bash.stdout.split(separator: "\n").map(String.init))
        XCTAssertEqual(try serveFlags().subtracting(offered), [], "flags bash does not offer")
    }

    func testZshAndFishCompletionsNameTheCommandAndItsFlags() throws {
        let zsh = try String(contentsOf: root.appendingPathComponent("usr/share/zsh/vendor-completions/_fleet-token-proxy"), encoding: .utf8)
        XCTAssertTrue(zsh.hasPrefix("#compdef fleet-token-proxy\n"), String(zsh.prefix(80)))
        let fish = try String(contentsOf: root.appendingPathComponent("usr/share/fish/vendor_completions.d/fleet-token-proxy.fish"), encoding: .utf8)
        XCTAssertTrue(fish.contains("complete -c 'fleet-token-proxy'") || fish.contains("complete -c fleet-token-proxy"), String(fish.prefix(400)))
        for flag in try serveFlags() where flag != "--help" {
            let name = String(flag.dropFirst(2))
            XCTAssertTrue(zsh.contains(flag), "zsh: \(flag)")
            XCTAssertTrue(fish.contains("-l '\(name)'") || fish.contains("-l \(name)"), "fish: \(flag)")
        }
    }
}
