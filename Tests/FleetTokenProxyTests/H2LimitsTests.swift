import XCTest
@testable import FleetTokenProxy

/// The limits that are sized from other bounds keep up with them (the flood tests in
/// Tests/grpc/test_adversarial_h2.py show what a client sees at each limit).
final class H2LimitsTests: XCTestCase {
    func testTheResetBurstLetsAClientCancelAllItsStreamsTwice() {
        XCTAssertGreaterThanOrEqual(H2Limits().streamResetBurst, 2 * UInt64(ServerLimits().maxConcurrentStreams))
    }

    func testTheSendBoundHoldsEveryHeaderListTheSidecarAccepts() {
        XCTAssertGreaterThanOrEqual(H2Limits().maxSendHeaderBlockBytes, ServerLimits().maxHeadBytes)
    }
}
