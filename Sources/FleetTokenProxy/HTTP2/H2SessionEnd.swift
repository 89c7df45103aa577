import CNghttp2

/// Why an `H2Session` can carry nothing more, as `H2Session.end` finds it: the one place every
/// way nghttp2 reports the end of a connection comes to. After a connection error the
/// connection is closed once the GOAWAY is out (RFC 9113 §5.4.1), never kept half alive.
struct H2SessionEnd: Equatable, CustomStringConvertible {
    enum Cause: Equatable {
        /// This side found a connection error in what the peer sent (a frame over the size, a
        /// header block HPACK cannot decode, DATA on stream 0, a window overflow, an RST_STREAM
        /// on an idle stream…): nghttp2 sent GOAWAY with `code` and wants nothing more.
        case localError(code: UInt32)
        /// The peer declared a connection error: GOAWAY with `code`, not NO_ERROR. It closes
        /// the connection (§5.4.1), so nothing more will be answered on it.
        case peerError(code: UInt32)
        /// nghttp2 failed in a way the session cannot survive (`libraryCode`, e.g. a peer that
        /// floods it with frames that each need an answer); a GOAWAY was queued before it
        /// ends.
        case fatal(libraryCode: Int32)
        /// Nothing left to read or write: a graceful GOAWAY either way and no stream open, or
        /// the session was freed.
        case finished
    }

    var cause: Cause
    /// nghttp2's own reason in the GOAWAY it sent (a fixed text of the library's, never a
    /// header field's value), if it gave one.
    var reason: String?

    /// A connection error, either side's: the connection goes at once, its streams with it.
    var isConnectionError: Bool { cause != .finished }

    var description: String {
        let what: String
        switch cause {
        case .localError(let code): what = "HTTP/2 connection error \(Self.name(code)), GOAWAY sent"
        case .peerError(let code): what = "the peer sent GOAWAY \(Self.name(code))"
        case .fatal(let libraryCode): what = "HTTP/2 session failed: " + String(cString: nghttp2_strerror(libraryCode))
        case .finished: what = "HTTP/2 session ended"
        }
        return reason.map { "\(what) (\($0))" } ?? what
    }

    /// An HTTP/2 error code's name (RFC 9113 §7).
    static func name(_ code: UInt32) -> String {
        String(cString: nghttp2_http2_strerror(code))
    }
}
