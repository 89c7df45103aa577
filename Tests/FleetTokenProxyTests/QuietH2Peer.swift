@testable import FleetTokenProxy

/// The delegate of an in-memory `H2Session` and its `Transport` in a test: hears everything,
/// does nothing, and keeps the GOAWAYs it was told of.
final class QuietH2Peer: H2SessionDelegate, TransportDelegate {
    private(set) var goAways: [(last: Int32, code: UInt32)] = []

    func h2BeginHeaders(stream: Int32) {}
    func h2HeadersEnded(stream: Int32, fields: H2HeaderList, endStream: Bool) {}
    func h2Data(stream: Int32, bytes: UnsafeRawBufferPointer) {}
    func h2DataEnded(stream: Int32) {}
    func h2StreamClosed(stream: Int32, errorCode: UInt32) {}
    func h2ReadBody(stream: Int32, into buffer: UnsafeMutableRawBufferPointer) -> H2BodyRead { .deferred }
    func h2GoAway(lastStreamID: Int32, errorCode: UInt32) { goAways.append((lastStreamID, errorCode)) }
    func transportReadable(_ transport: Transport) {}
    func transportWritable(_ transport: Transport) {}
    func transportEvent(_ transport: Transport, events: Int16) {}
}
