/// When an upstream HTTP/2 connection sends PING, finds its path dead, or closes for idleness,
/// as a value-type state machine: the connection feeds it periodic ticks (with whether any
/// stream is open), PING acknowledgements and the peer's GOAWAY, and carries out what each
/// returns. Times are monotonic seconds passed in, so it is tested with a fake clock.
///
/// | event          | condition                                          | action / effect             |
/// |----------------|----------------------------------------------------|-----------------------------|
/// | tick           | a PING unanswered for `ackTimeout`                 | pathDead                    |
/// | tick           | streams open                                       | — (idle clock stops)        |
/// | tick           | idle for `idleTimeout`                             | closeIdle                   |
/// | tick           | idle, no PING out, last PING `pingInterval` ago    | sendPing                    |
/// | pingAcked      | a PING out                                         | roundTrip(seconds)          |
/// | goAway         | ENHANCE_YOUR_CALM                                  | interval doubled (bounded)  |
/// | goAway         | connection older than `minimumAgeToReplace`        | replace, else wait          |
///
/// PINGs go only on an idle connection, no more often than `pingInterval`: gRPC servers answer
/// pings more frequent than five minutes without calls in flight with GOAWAY ENHANCE_YOUR_CALM
/// (docs/CONTRACT.md §6, `--upstream-idle-timeout`). A call in flight is bounded by its own
/// deadline instead.
struct H2Keepalive: Equatable {
    static let defaultPingInterval: Double = 300
    static let maxPingInterval: Double = 3600
    static let defaultAckTimeout: Double = 20
    /// A connection told to go away younger than this is not replaced at once: a peer that
    /// sends GOAWAY to every new connection must not turn the pool into a dialing loop.
    static let minimumAgeToReplace: Double = 1

    enum TickAction: Equatable {
        case sendPing
        /// The last PING went unanswered: close the connection and open another.
        case pathDead
        /// Idle for `idleTimeout`: close the connection.
        case closeIdle
    }

    enum AckAction: Equatable {
        case roundTrip(seconds: Double)
    }

    enum GoAwayAction: Equatable {
        /// Open another connection now; later connections PING every `pingInterval`.
        case replace(pingInterval: Double)
        /// Leave the next call to dial; later connections PING every `pingInterval`.
        case wait(pingInterval: Double)
    }

    private(set) var pingInterval: Double
    let ackTimeout: Double
    let idleTimeout: Double
    private let openedAt: Double
    private var lastPingAt: Double
    private var pingOutSince: Double?
    private var idleSince: Double?

    init(now: Double, pingInterval: Double, ackTimeout: Double, idleTimeout: Double) {
        self.pingInterval = pingInterval
        self.ackTimeout = ackTimeout
        self.idleTimeout = idleTimeout
        openedAt = now
        lastPingAt = now
        idleSince = now // ready with no stream yet
    }

    /// How often the connection should tick: fine enough for the PING, its answer and the
    /// idle bound, and no finer.
    var tickPeriod: Double { max(0.01, min(pingInterval, ackTimeout, idleTimeout) / 2) }

    mutating func tick(now: Double, idle: Bool) -> TickAction? {
        if let sent = pingOutSince, now - sent >= ackTimeout { return .pathDead }
        guard idle else {
            idleSince = nil
            return nil
        }
        let since = idleSince ?? now
        idleSince = since
        if now - since >= idleTimeout { return .closeIdle }
        guard pingOutSince == nil, now - lastPingAt >= pingInterval else { return nil }
        pingOutSince = now
        lastPingAt = now
        return .sendPing
    }

    /// Seconds since the connection was ready.
    func age(now: Double) -> Double { now - openedAt }

    mutating func pingAcked(now: Double) -> AckAction? {
        guard let sent = pingOutSince else { return nil }
        pingOutSince = nil
        return .roundTrip(seconds: now - sent)
    }

    mutating func goAway(errorCode: UInt32, now: Double) -> GoAwayAction {
        if errorCode == Self.enhanceYourCalm { pingInterval = min(pingInterval * 2, Self.maxPingInterval) }
        pingOutSince = nil
        return now - openedAt >= Self.minimumAgeToReplace ? .replace(pingInterval: pingInterval) : .wait(pingInterval: pingInterval)
    }

    /// HTTP/2's ENHANCE_YOUR_CALM error code (RFC 9113 §7).
    static let enhanceYourCalm: UInt32 = 0xb
}
