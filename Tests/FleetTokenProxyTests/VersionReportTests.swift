import XCTest
@testable import FleetTokenProxy

/// `--version`: the build first, then the toolchain and the C libraries as loaded.
final class VersionReportTests: XCTestCase {
    func testTheTextNamesTheBuildThenOneComponentALine() {
        let report = VersionReport(version: "1.2.3", revision: "abc123def456", swift: "6.3.1",
                                   libraries: RuntimeLibraries(libevent: "2.1.12-stable", nghttp2: "1.52.0", openSSL: "3.0.19"))
        XCTAssertEqual(report.text, """
            fleet-token-proxy 1.2.3 (revision abc123def456)
            swift 6.3.1
            libevent 2.1.12-stable
            nghttp2 1.52.0
            openssl 3.0.19
            """)
    }

    /// Asked of the libraries, not their headers: each answer is a dotted version, never "unknown".
    func testTheLoadedLibrariesReportTheirOwnVersions() {
        let loaded = RuntimeLibraries.loaded()
        for (name, version) in [("libevent", loaded.libevent), ("nghttp2", loaded.nghttp2), ("openssl", loaded.openSSL)] {
            XCTAssertNotNil(version.range(of: #"^[0-9]+\.[0-9]+\.[0-9]+"#, options: .regularExpression), "\(name): \(version)")
        }
    }

    func testTheSwiftVersionIsKnownWithOrWithoutAStamp() {
        XCTAssertNotNil(BuildInfo.swiftVersion.range(of: #"^[0-9]+\.[0-9]+"#, options: .regularExpression), BuildInfo.swiftVersion)
    }
}
