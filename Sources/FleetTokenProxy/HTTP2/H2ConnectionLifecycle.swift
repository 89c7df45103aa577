/// The life of one HTTP/2 connection as a pure state machine (after swift-nio-http2's
/// server connection management): active → draining (GOAWAY sent with the last stream id the
/// sidecar took, streams below it finishing) → closed. The connection feeds it stream opens and
/// closes, drain requests and the peer's GOAWAY, and carries out the actions.
///
/// | state    | event                         | next state | actions                                |
/// |----------|-------------------------------|------------|----------------------------------------|
/// | active   | streamOpened                  | active     | accept                                 |
/// | active   | drain(last)                   | draining   | sendGoAway(last); close if no streams  |
/// | active   | peerGoAway                    | draining   | close if no streams                    |
/// | draining | streamOpened (id ≤ last)      | draining   | accept                                 |
/// | draining | streamOpened (id > last)      | draining   | refuse (REFUSED_STREAM)                |
/// | draining | streamClosed, none left       | draining   | close                                  |
/// | draining | drain / peerGoAway            | draining   | none                                   |
/// | any      | sessionEnded / failed         | closed     | close                                  |
/// | closed   | anything                      | closed     | none (streamOpened: refuse)            |
struct H2ConnectionLifecycle: Equatable {
    enum State: Equatable {
        case active
        /// `lastStreamID`: the highest stream the connection still serves.
        case draining(lastStreamID: Int32)
        case closed
    }

    enum Action: Equatable {
        case accept
        case refuse
        /// Send GOAWAY (NO_ERROR) naming `lastStreamID`, keep reading for the open streams.
        case sendGoAway(lastStreamID: Int32)
        /// Close once what is queued has been written.
        case close
    }

    private(set) var state: State = .active
    private(set) var openStreams = 0

    var isDraining: Bool { if case .draining = state { return true } else { return false } }

    mutating func streamOpened(_ id: Int32) -> [Action] {
        switch state {
        case .active:
            openStreams += 1
            return [.accept]
        case .draining(let last):
            guard id <= last else { return [.refuse] }
            openStreams += 1
            return [.accept]
        case .closed:
            return [.refuse]
        }
    }

    /// A stream that `streamOpened` accepted has closed.
    mutating func streamClosed() -> [Action] {
        guard openStreams > 0 else { return [] }
        openStreams -= 1
        return isDraining && openStreams == 0 ? [.close] : []
    }

    /// The sidecar stops taking streams past `lastProcessedStreamID` (SIGTERM).
    mutating func drain(lastProcessedStreamID: Int32) -> [Action] {
        guard state == .active else { return [] }
        state = .draining(lastStreamID: max(0, lastProcessedStreamID))
        return [.sendGoAway(lastStreamID: max(0, lastProcessedStreamID))] + (openStreams == 0 ? [.close] : [])
    }

    /// The client sent GOAWAY: it opens no more streams; close when its streams are done.
    mutating func peerGoAway() -> [Action] {
        guard state == .active else { return [] }
        state = .draining(lastStreamID: .max)
        return openStreams == 0 ? [.close] : []
    }

    /// The session has nothing left to read or write, or the connection broke.
    mutating func sessionEnded() -> [Action] {
        guard state != .closed else { return [] }
        state = .closed
        openStreams = 0
        return [.close]
    }
}
