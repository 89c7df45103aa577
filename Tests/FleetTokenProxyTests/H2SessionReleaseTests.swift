import CEvent
import XCTest
@testable import FleetTokenProxy

/// Trailers relayed from one session to another are let go of by the submit itself (they wait
/// in the call until the body is read, unlike a head, which is relayed within the callback that
/// lends it), so the session they came from gathers its next block in the same storage.
final class H2SessionReleaseTests: XCTestCase {
    func testReleasingTrailerSubmitLetsGoOfTheList() throws {
        let loop = try EventLoop()
        let quiet = QuietH2Peer()
        let transport = Transport(bev: try XCTUnwrap(bufferevent_socket_new(loop.base, -1, 0)), delegate: quiet)
        defer { transport.close() }
        let session = try H2Session(isServer: true, transport: transport, delegate: quiet)
        defer { session.close() }

        var trailers: H2HeaderList? = H2HeaderList()
        trailers?.append(name: "grpc-status", value: "0")
        let kept = trailers
        session.submitTrailer(stream: 1, releasing: &trailers)
        XCTAssertNil(trailers)
        XCTAssertEqual(kept?.count, 1, "a copy made before is not touched")
    }
}
