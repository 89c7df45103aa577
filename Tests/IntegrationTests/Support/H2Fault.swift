/// A misbehaviour of an HTTP/2 upstream towards the sidecar, committed on the stream of the
/// request that meets it (issue 25's list): each is written as raw frames (`H2FrameBytes`)
/// after what the upstream's nghttp2 session had queued, since nghttp2 itself refuses to send
/// a malformed frame. Error codes: RFC 9113 §7.
enum H2Fault: CustomStringConvertible {
    /// A HEADERS frame longer than the sidecar's SETTINGS_MAX_FRAME_SIZE (16,384, it never
    /// raises it): FRAME_SIZE_ERROR, a connection error (§4.2).
    case oversizedHeaders
    /// A header block HPACK cannot decode (an indexed field with index 0, RFC 7541 §6.1):
    /// COMPRESSION_ERROR, a connection error (§4.3).
    case undecodableHeaderBlock
    /// DATA on stream 0: PROTOCOL_ERROR (§6.1).
    case dataOnStreamZero
    /// WINDOW_UPDATE on stream 0 that takes the sidecar's send window past 2^31 − 1:
    /// FLOW_CONTROL_ERROR (§6.9.1).
    case windowUpdateOverflow
    /// A thousand empty SETTINGS frames at once, each owed an ACK: more than the sidecar lets
    /// a peer make it queue (`H2Limits.maxOutboundAcks`).
    case settingsFlood
    /// GOAWAY naming the stream before this one (it was not processed, §6.8), with no error;
    /// the upstream then keeps the TCP connection open and says nothing more.
    case goAwayBeforeStream
    /// GOAWAY naming this stream (it may have been processed) with INTERNAL_ERROR, the TCP
    /// connection left open with no answer: a connection error the peer declared.
    case goAwayWithStreamInFlight
    /// RST_STREAM INTERNAL_ERROR on the stream, a hundred more on it, then one on a stream the
    /// sidecar never opened (an idle stream: PROTOCOL_ERROR, §5.1).
    case resetStorm
    /// A fatal TLS alert record (internal_error) written to the socket under the TLS layer
    /// before any answer, then the socket closed: what a peer whose TLS stack failed sends.
    case tlsAlert
    /// The answer's head and part of its body, then the TCP connection reset.
    case abruptCloseMidAnswer

    var description: String {
        switch self {
        case .oversizedHeaders: return "HEADERS over the frame size"
        case .undecodableHeaderBlock: return "bad HPACK"
        case .dataOnStreamZero: return "DATA on stream 0"
        case .windowUpdateOverflow: return "WINDOW_UPDATE overflow"
        case .settingsFlood: return "SETTINGS flood"
        case .goAwayBeforeStream: return "GOAWAY without the stream"
        case .goAwayWithStreamInFlight: return "GOAWAY with the stream in flight"
        case .resetStorm: return "RST_STREAM storm"
        case .tlsAlert: return "TLS alert"
        case .abruptCloseMidAnswer: return "close mid-answer"
        }
    }

    /// An HTTP/2 connection error (RFC 9113 §5.4.1), either side's: the sidecar names it in its
    /// log. The others end the socket, or leave the connection sound.
    var isConnectionError: Bool {
        switch self {
        case .goAwayBeforeStream, .tlsAlert, .abruptCloseMidAnswer: return false
        default: return true
        }
    }

    /// What is done to the socket after the frames are written.
    enum Ending {
        /// Nothing: the connection stays open, the upstream reads and says nothing more.
        case keepOpen
        /// The TLS alert record is written under TLS, then the socket closes.
        case tlsAlertThenClose
        /// The socket is reset (SO_LINGER 0).
        case reset
    }

    var ending: Ending {
        switch self {
        case .tlsAlert: return .tlsAlertThenClose
        case .abruptCloseMidAnswer: return .reset
        default: return .keepOpen
        }
    }

    /// The frames the upstream writes for a request on `stream`.
    func frames(stream: Int32) -> [UInt8] {
        switch self {
        case .oversizedHeaders:
            return H2FrameBytes.frame(type: 1, flags: 0x4, stream: stream, payload: [UInt8](repeating: 0, count: 16_385))
        case .undecodableHeaderBlock:
            return H2FrameBytes.frame(type: 1, flags: 0x5, stream: stream, payload: [0x80])
        case .dataOnStreamZero:
            return H2FrameBytes.frame(type: 0, flags: 0, stream: 0, payload: [1, 2, 3, 4])
        case .windowUpdateOverflow:
            return H2FrameBytes.frame(type: 8, flags: 0, stream: 0, payload: H2FrameBytes.word(0x7fff_ffff))
        case .settingsFlood:
            return (0..<1000).flatMap { _ in H2FrameBytes.frame(type: 4, flags: 0, stream: 0, payload: []) }
        case .goAwayBeforeStream:
            return H2FrameBytes.goAway(lastStreamID: max(0, stream - 2), errorCode: 0)
        case .goAwayWithStreamInFlight:
            return H2FrameBytes.goAway(lastStreamID: stream, errorCode: 2)
        case .resetStorm:
            let first = H2FrameBytes.frame(type: 3, flags: 0, stream: stream, payload: H2FrameBytes.word(2))
            let storm = (0..<100).flatMap { _ in H2FrameBytes.frame(type: 3, flags: 0, stream: stream, payload: H2FrameBytes.word(8)) }
            return first + storm + H2FrameBytes.frame(type: 3, flags: 0, stream: stream + 200, payload: H2FrameBytes.word(8))
        case .tlsAlert:
            return []
        case .abruptCloseMidAnswer:
            // :status 200 (static index 8), content-type as a literal without indexing (RFC 7541
            // §6.2.2, name index 31): neither side's HPACK table changes.
            let head: [UInt8] = [0x88, 0x0f, 0x10, 16] + Array("application/json".utf8)
            return H2FrameBytes.frame(type: 1, flags: 0x4, stream: stream, payload: head)
                + H2FrameBytes.frame(type: 0, flags: 0, stream: stream, payload: Array(#"{"name":"cut sh"#.utf8))
        }
    }

    /// A fatal alert (level 2, internal_error 80) as a TLS 1.2 record, unprotected.
    static let fatalAlertRecord: [UInt8] = [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x50]
}
