@testable import FleetTokenProxy
import Foundation
import XCTest

/// A client's HTTP/2 connection error ends its connection as RFC 9113 §5.4.1 says: GOAWAY with
/// the error, then close; the calls it had in flight end with it, their upstream streams reset
/// at once (not left to the 60 s answer bound), and the sidecar keeps no descriptor of it.
final class ClientConnectionErrorTests: ScriptedUpstreamTestCase {
    func testAClientsMalformedFrameGetsGoAwayThenCloseAndItsCallsUpstreamStreamIsReset() throws {
        // DATA on stream 0: a connection error (RFC 9113 §6.1).
        let client = try expectCallEndedByClientFault(H2FrameBytes.frame(type: 0, flags: 0, stream: 0, payload: [1, 2, 3, 4]))
        let goAways = H2FrameBytes.frames(in: client.unreadBytes).filter { $0.type == 7 }
        XCTAssertEqual(goAways.count, 1, "one GOAWAY before the close")
        if let goAway = goAways.first {
            XCTAssertEqual(H2FrameBytes.word(in: goAway.payload, at: 4), 1, "PROTOCOL_ERROR")
        }
    }

    /// A client that declares a connection error (GOAWAY with an error code) is done with the
    /// connection, whether or not it closes it: its calls are not served on.
    func testAClientsGoAwayWithAnErrorEndsItsConnectionAndItsCallsUpstreamStreamIsReset() throws {
        _ = try expectCallEndedByClientFault(H2FrameBytes.goAway(lastStreamID: 0, errorCode: 2))
    }

    /// Opens an h2c connection to the sidecar with a gRPC call in flight (the upstream never
    /// answers), sends `fault`, and expects the connection closed at once, the call's upstream
    /// stream reset (CANCEL), the upstream connection kept for other calls, and the client's
    /// descriptor gone. Returns the client, with what the sidecar sent it unread.
    private func expectCallEndedByClientFault(_ fault: [UInt8], file: StaticString = #filePath, line: UInt = #line) throws -> RawClient {
        let upstream = try ScriptedH2Upstream { _, _ in .hang }
        self.upstream = upstream
        sidecar = try SidecarProcess(["--upstream", "http://\(upstream.address)", "--provider-url", standIns.providerTemplate,
                                      "--upstream-protocol", "h2"])
        XCTAssertTrue(eventually(within: 5) { upstream.connectionCount == 1 }, "the warm connection", file: file, line: line)

        let client = try RawClient(address: sidecar.address)
        let head = H2FrameBytes.literalHeaderBlock([
            (":method", "POST"), (":scheme", "http"), (":path", "/maps.fleetengine.v1.VehicleService/GetVehicle"),
            (":authority", "x"), ("content-type", "application/grpc"), ("te", "trailers"),
        ])
        let name = Array("providers/p/vehicles/client-fault".utf8)
        let message = [0, 0, 0, 0, UInt8(name.count + 2), 0x1a, UInt8(name.count)] + name
        client.send(H2FrameBytes.preface + H2FrameBytes.frame(type: 4, flags: 0, stream: 0, payload: [])
            + H2FrameBytes.frame(type: 1, flags: 0x4, stream: 1, payload: head)
            + H2FrameBytes.frame(type: 0, flags: 0x1, stream: 1, payload: message))
        let request = try XCTUnwrap(upstream.waitForRequests(1).first, "the call reached the upstream", file: file, line: line)
        // The client's connection among them (and the provider's, kept for later fetches).
        let descriptorsWithClient = sidecar.descriptorCount

        let sent = Date()
        client.send(fault)
        XCTAssertTrue(client.waitForClose(timeout: 3), "the sidecar closes the connection", file: file, line: line)
        XCTAssertLessThan(Date().timeIntervalSince(sent), 2, "at once", file: file, line: line)
        XCTAssertTrue(eventually(within: 2) { upstream.resets.contains { $0.stream == request.stream && $0.connection == request.connection } },
                      "the call's upstream stream is reset (\(upstream.resets))", file: file, line: line)
        XCTAssertEqual(upstream.resets.first?.errorCode, 8, "CANCEL: the client went away", file: file, line: line)
        XCTAssertEqual(upstream.openConnectionCount, 1, "the upstream connection stays for other calls", file: file, line: line)
        XCTAssertTrue(eventually(within: 3) { self.sidecar.descriptorCount == descriptorsWithClient - 1 },
                      "\(sidecar.descriptorCount) descriptors open, \(descriptorsWithClient) with the client's", file: file, line: line)
        return client
    }
}
