import Foundation
import XCTest

/// A start on a sound host logs no warning: the nghttp2 check asks the library (patched on this
/// machine, as the package's `Depends:` requires) rather than judging its version string, which
/// said 1.52.0 and used to warn on every start.
final class StartupWarningTests: XCTestCase {
    func testAStartWithThePatchedLibraryLogsNoWarning() throws {
        let sidecar = try SidecarProcess(["--provider-url", "http://127.0.0.1:9/t/{id}", "--upstream", "http://127.0.0.1:9"])
        XCTAssertEqual(sidecar.stop(), 0)
        XCTAssertTrue(sidecar.log.contains(" listening "), sidecar.log)
        let warnings = sidecar.log.split(separator: "\n").filter { $0.contains(" warning ") }
        XCTAssertEqual(warnings, [], sidecar.log)
    }
}
