import FleetTokenProxy
import Foundation
import XCTest

/// `fleet-token-proxy --version` and `fleet_token_proxy_build_info`: which build answers, and the
/// libraries it runs with; the revision comes from scripts/build-stamp, "unknown" without it.
final class VersionTests: XCTestCase {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    func versionLines() throws -> [String] {
        let result = try runCommand(SidecarProcess.binary.path, ["--version"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stderr, "")
        return result.stdout.split(separator: "\n").map(String.init)
    }

    func testVersionNamesTheBuildTheToolchainAndTheLoadedLibraries() throws {
        let lines = try versionLines()
        XCTAssertEqual(lines.count, 5, "\(lines)")
        let first = try XCTUnwrap(lines.first)
        XCTAssertNotNil(first.range(of: #"^fleet-token-proxy \#(BuildInfo.version) \(revision (unknown|[0-9a-f]{12}(-dirty)?)\)$"#,
                                    options: .regularExpression), first)
        XCTAssertNotNil(lines[1].range(of: #"^swift [0-9]+\.[0-9]+"#, options: .regularExpression), lines[1])
        // The same libraries are loaded into this test process as into the binary.
        let loaded = RuntimeLibraries.loaded()
        XCTAssertEqual(Array(lines.dropFirst(2)), ["libevent \(loaded.libevent)", "nghttp2 \(loaded.nghttp2)", "openssl \(loaded.openSSL)"])
    }

    func testMetricsCarryTheBuildTheVersionNames() throws {
        let first = try XCTUnwrap(try versionLines().first)
        let revision = String(first.split(separator: " ").last!.dropLast())
        let sidecar = try SidecarProcess([
            "--provider-url", "http://127.0.0.1:9/t/{id}", "--upstream", "http://127.0.0.1:9", "--admin-listen", "127.0.0.1:0",
        ])
        defer { sidecar.stop() }
        let admin = try XCTUnwrap(sidecar.adminAddress, sidecar.log)
        let page = MetricsPage(text: try httpGet("http://\(admin)/metrics").body)
        XCTAssertEqual(page.value("fleet_token_proxy_build_info", ["version": BuildInfo.version, "revision": revision]), 1, page.text)
    }

    // MARK: The stamp

    func testTheStampNamesTheCheckedOutRevision() throws {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("stamp-\(getpid()).h")
        defer { try? FileManager.default.removeItem(at: out) }
        let run = try runCommand(Self.root.appendingPathComponent("scripts/build-stamp").path, [out.path])
        XCTAssertEqual(run.status, 0, run.stderr)
        let head = try runCommand("/usr/bin/git", ["-C", Self.root.path, "rev-parse", "--short=12", "HEAD"]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let stamp = try String(contentsOf: out, encoding: .utf8)
        XCTAssertNotNil(stamp.range(of: #"#define FTE_BUILD_REVISION "\#(head)(-dirty)?""#, options: .regularExpression), stamp)
        XCTAssertNotNil(stamp.range(of: #"#define FTE_BUILD_SWIFT_VERSION "[0-9]+\.[0-9]+"#, options: .regularExpression), stamp)
    }

    /// A source tarball: no git, so the stamp says "unknown"; and no stamp at all compiles too.
    func testOutsideGitTheRevisionIsUnknownAndNoStampStillBuilds() throws {
        let tree = FileManager.default.temporaryDirectory.appendingPathComponent("tarball-\(getpid())")
        defer { try? FileManager.default.removeItem(at: tree) }
        let scripts = tree.appendingPathComponent("scripts"), shims = tree.appendingPathComponent("Sources/CShims")
        try FileManager.default.createDirectory(at: scripts, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: shims, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: Self.root.appendingPathComponent("scripts/build-stamp"), to: scripts.appendingPathComponent("build-stamp"))
        try FileManager.default.copyItem(at: Self.root.appendingPathComponent("Sources/CShims/BuildStamp.c"), to: shims.appendingPathComponent("BuildStamp.c"))
        // A stand-in for CShims.h: the two declarations, without OpenSSL's headers.
        try "const char *fte_build_revision(void);\nconst char *fte_build_swift_version(void);\n"
            .write(to: shims.appendingPathComponent("CShims.h"), atomically: true, encoding: .utf8)
        try "#include <stdio.h>\n#include \"CShims.h\"\nint main(void) { printf(\"%s\\n\", fte_build_revision()); return 0; }\n"
            .write(to: shims.appendingPathComponent("main.c"), atomically: true, encoding: .utf8)
        func compiledRevision() throws -> String {
            let binary = shims.appendingPathComponent("revision").path
            let cc = try runCommand("/usr/bin/cc", ["-o", binary, shims.appendingPathComponent("BuildStamp.c").path,
                                                    shims.appendingPathComponent("main.c").path])
            XCTAssertEqual(cc.status, 0, cc.stderr)
            return try runCommand(binary, []).stdout
        }
        XCTAssertEqual(try compiledRevision(), "unknown\n")
        let stamp = try runCommand(scripts.appendingPathComponent("build-stamp").path, [], environment: ["PATH": "/usr/bin:/bin", "GIT_CEILING_DIRECTORIES": tree.deletingLastPathComponent().path])
        XCTAssertEqual(stamp.status, 0, stamp.stderr)
        XCTAssertTrue(try String(contentsOf: shims.appendingPathComponent("BuildStamp.generated.h"), encoding: .utf8)
            .contains(#"#define FTE_BUILD_REVISION "unknown""#))
        XCTAssertEqual(try compiledRevision(), "unknown\n")
        // And a stamp that names a revision is the one compiled in.
        try "#define FTE_BUILD_REVISION \"0123456789ab\"\n".write(
            to: shims.appendingPathComponent("BuildStamp.generated.h"), atomically: true, encoding: .utf8)
        XCTAssertEqual(try compiledRevision(), "0123456789ab\n")
    }
}
