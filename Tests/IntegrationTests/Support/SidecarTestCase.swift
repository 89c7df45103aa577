@testable import FleetTokenProxy
import Foundation
import XCTest

/// A test case with the stand-ins running and, once `startSidecar` is called, the real binary
/// between them; both are stopped after each test.
class SidecarTestCase: XCTestCase {
    var standIns: StandInHost!
    var sidecar: SidecarProcess!

    override func setUpWithError() throws {
        standIns = try StandInHost()
    }

    override func tearDown() {
        sidecar?.stop()
        standIns?.stop()
    }

    /// Starts the sidecar with the stand-ins as upstream and token provider, plus `extra` flags.
    func startSidecar(_ extra: [String] = []) throws {
        sidecar = try SidecarProcess([
            "--upstream", "http://\(standIns.fleetEngineAddress)",
            "--provider-url", standIns.providerTemplate,
        ] + extra)
    }
}
