import Foundation
import XCTest

/// A `SidecarTestCase` whose upstream is a `ScriptedH2Upstream` the test starts, with a
/// scratch folder (for its certificate); both are gone after each test.
class ScriptedUpstreamTestCase: SidecarTestCase {
    var upstream: ScriptedH2Upstream!
    var dir: URL!

    override func setUpWithError() throws {
        try super.setUpWithError()
        signal(SIGPIPE, SIG_IGN)
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("ftp-scripted-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        super.tearDown()
        upstream?.stop()
        try? FileManager.default.removeItem(at: dir)
    }
}
