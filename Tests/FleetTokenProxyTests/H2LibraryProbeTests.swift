import XCTest
@testable import FleetTokenProxy

/// Each probe of the loaded nghttp2 can tell both answers apart: short of the attack the library
/// lets the session go on (so the probe's "stopped" is the library's doing, not the probe's frames
/// failing), past it the library stops it.
final class H2LibraryProbeTests: XCTestCase {
    let limits = H2Limits()

    func testResetsWithinTheBurstGetNoGoAwayAndPastItTheyDo() {
        XCTAssertFalse(H2LibraryProbe.sendsGoAway(afterResets: Int(limits.streamResetBurst) - 1, limits: limits))
        XCTAssertTrue(H2LibraryProbe.sendsGoAway(afterResets: Int(limits.streamResetBurst) + 50, limits: limits))
    }

    func testContinuationsUpToTheLimitAreTakenAndOneMoreFailsTheSession() {
        XCTAssertFalse(H2LibraryProbe.failsSession(afterContinuations: limits.maxContinuations, limits: limits))
        XCTAssertTrue(H2LibraryProbe.failsSession(afterContinuations: limits.maxContinuations + 1, limits: limits))
    }

    func testALiveSessionProcessesTheDataFrameAndATerminatedOneDoesNot() {
        XCTAssertTrue(H2LibraryProbe.processesData(afterTerminating: false, limits: limits))
        XCTAssertFalse(H2LibraryProbe.processesData(afterTerminating: true, limits: limits))
    }

    func testGoAwayCodesAreReadFrameByFrame() {
        // SETTINGS ACK, then GOAWAY(last stream 5, INTERNAL_ERROR), then PING.
        let bytes: [UInt8] = [0, 0, 0, 4, 1, 0, 0, 0, 0]
            + [0, 0, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 2]
            + [0, 0, 8, 6, 0, 0, 0, 0, 0] + [UInt8](repeating: 7, count: 8)
        XCTAssertEqual(H2LibraryProbe.goAwayCodes(in: bytes), [2])
        XCTAssertEqual(H2LibraryProbe.goAwayCodes(in: Array(bytes.prefix(20))), [], "a cut frame is not read")
    }
}
