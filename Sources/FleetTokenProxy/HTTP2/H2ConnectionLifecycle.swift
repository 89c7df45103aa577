/// The life of one HTTP/2 client connection as a pure state machine (after swift-nio-http2's
/// server connection management): active → draining (GOAWAY sent with the last stream id the
/// sidecar took, streams below it finishing) → closing (once what is queued is written) →
/// closed. The connection feeds it stream opens and closes, drain requests, the peer's GOAWAY,
/// the session being over (`H2Session.end`: a connection error either side, or nothing left to
/// say) and the close, and carries out what each returns (docs/CONTRACT.md §7; a connection
/// error ends the connection, RFC 9113 §5.4.1).
///
/// | state    | event                         | next state | action                                 |
/// |----------|-------------------------------|------------|----------------------------------------|
/// | active   | streamOpened                  | active     | accept                                 |
/// | active   | drain(last)                   | draining   | sendGoAway(last)                       |
/// | active   | drain(last), no streams       | closing    | sendGoAway(last), then close           |
/// | active   | peerGoAway                    | draining   | —                                      |
/// | active   | peerGoAway, no streams        | closing    | closeWhenWritten                       |
/// | draining | streamOpened (id ≤ last)      | draining   | accept                                 |
/// | draining | streamOpened (id > last)      | draining   | refuse (REFUSED_STREAM)                |
/// | draining | streamClosed, none left       | closing    | closeWhenWritten                       |
/// | draining | drain / peerGoAway            | draining   | —                                      |
/// | closing  | streamOpened                  | closing    | refuse                                 |
/// | active, draining | sessionOver (this side's error, or ended) | closing | closeWhenWritten (the GOAWAY) |
/// | active, draining, closing | sessionOver (the peer's error, a fatal failure) | closing | closeNow |
/// | any      | sessionEnded                  | closed     | close                                  |
/// | closed   | streamOpened                  | closed     | refuse                                 |
/// | closed   | anything else                 | closed     | —                                      |
struct H2ConnectionLifecycle: Equatable {
    enum State: Equatable {
        case active(openStreams: Int)
        /// `lastStreamID`: the highest stream the connection still serves.
        case draining(lastStreamID: Int32, openStreams: Int)
        /// Nothing is left to serve: close once what is queued has been written.
        case closing
        case closed
    }

    enum StreamDecision: Equatable { case accept, refuse }

    enum CloseAction: Equatable {
        /// Close once what is queued has been written.
        case closeWhenWritten
    }

    enum DrainAction: Equatable {
        /// Send GOAWAY (NO_ERROR) naming `lastStreamID`; keep reading for the open streams, or
        /// close once it is written if `close`.
        case sendGoAway(lastStreamID: Int32, close: Bool)
    }

    enum SessionEndAction: Equatable {
        /// Free the connection now (first end only).
        case close
    }

    enum SessionOverAction: Equatable {
        /// Close now: the peer reads nothing more (it declared a connection error), or the
        /// session failed.
        case closeNow
        /// Close once what is queued, this side's GOAWAY among it, is written.
        case closeWhenWritten
    }

    private(set) var state: State = .active(openStreams: 0)

    var openStreams: Int {
        switch state {
        case .active(let open), .draining(_, let open): return open
        case .closing, .closed: return 0
        }
    }

    var isClosed: Bool { state == .closed }
    /// The connection closes as soon as its output is written.
    var closesWhenWritten: Bool { state == .closing }

    mutating func streamOpened(_ id: Int32) -> StreamDecision {
        switch state {
        case .active(let open):
            state = .active(openStreams: open + 1)
            return .accept
        case .draining(let last, let open):
            guard id <= last else { return .refuse }
            state = .draining(lastStreamID: last, openStreams: open + 1)
            return .accept
        case .closing, .closed:
            return .refuse
        }
    }

    /// A stream that `streamOpened` accepted has closed.
    mutating func streamClosed() -> CloseAction? {
        switch state {
        case .active(let open):
            state = .active(openStreams: max(0, open - 1))
            return nil
        case .draining(let last, let open):
            guard open > 1 else {
                state = .closing
                return .closeWhenWritten
            }
            state = .draining(lastStreamID: last, openStreams: open - 1)
            return nil
        case .closing, .closed:
            return nil
        }
    }

    /// The sidecar stops taking streams past `lastProcessedStreamID` (SIGTERM).
    mutating func drain(lastProcessedStreamID: Int32) -> DrainAction? {
        guard case .active(let open) = state else { return nil }
        let last = max(0, lastProcessedStreamID)
        state = open == 0 ? .closing : .draining(lastStreamID: last, openStreams: open)
        return .sendGoAway(lastStreamID: last, close: open == 0)
    }

    /// The client sent GOAWAY: it opens no more streams; close when its streams are done.
    mutating func peerGoAway() -> CloseAction? {
        guard case .active(let open) = state else { return nil }
        guard open == 0 else {
            state = .draining(lastStreamID: .max, openStreams: open)
            return nil
        }
        state = .closing
        return .closeWhenWritten
    }

    /// The session can carry nothing more (`H2Session.end`, for `cause`): no stream is taken
    /// any more, and every open one ends with the connection.
    mutating func sessionOver(_ cause: H2SessionEnd.Cause) -> SessionOverAction? {
        switch cause {
        case .peerError, .fatal:
            guard state != .closed else { return nil }
            state = .closing
            return .closeNow
        case .localError, .finished:
            guard state != .closing, state != .closed else { return nil }
            state = .closing
            return .closeWhenWritten
        }
    }

    /// The connection closes now (after `sessionOver`, a drain, or a broken socket).
    mutating func sessionEnded() -> SessionEndAction? {
        guard state != .closed else { return nil }
        state = .closed
        return .close
    }
}
