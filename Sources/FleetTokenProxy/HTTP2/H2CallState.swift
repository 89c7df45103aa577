/// Where one HTTP/2 call stands, as a pure state machine: events in, actions out, no sockets,
/// no clock (times are passed in). `HTTP2ClientConnection` and `HTTP2UpstreamConnection` feed it
/// what happens on the two streams and carry out the actions it returns; the byte buffers stay
/// in `H2Call`.
///
/// | phase           | event                                   | next phase      | actions                                   |
/// |-----------------|-----------------------------------------|-----------------|-------------------------------------------|
/// | receivingHead   | headBlockEnded                          | routing         | armTimer (head / grpc-timeout), route     |
/// | routing         | data                                    | routing         | buffer, route                             |
/// | routing         | dataEnded / trailers                    | routing         | route (request ended: decide now)         |
/// | routing         | routed                                  | awaitingToken   | armTimer (grpc-timeout) or cancelTimer, fetchToken |
/// | awaitingToken   | data                                    | awaitingToken   | buffer (no stream credit)                 |
/// | awaitingToken   | tokenArrived                            | forwarding      | cancelTimer, startUpstream                |
/// | forwarding      | upstreamHead (retryable, first attempt) | retrying        | retryWithFreshToken, fetchToken           |
/// | retrying        | tokenArrived                            | forwarding      | cancelTimer, startUpstream                |
/// | forwarding      | upstreamHead                            | relaying        | relayHead                                 |
/// | forwarding, relaying | upstreamBodyStalled                | same            | none (remembered)                         |
/// | forwarding, relaying | data / dataEnded / trailers        | same            | (buffer,) resumeUpstreamBody if stalled   |
/// | relaying, answeredLocally | clientBodyStalled             | same            | none (remembered)                         |
/// | relaying        | responseBytes                           | relaying        | resumeClientBody if stalled; armTimer (ioTimeout) if the client had taken all |
/// | relaying        | responseTaken                           | relaying        | none (the client's progress is noted)     |
/// | relaying        | tick, client took nothing for ioTimeout | closed          | resetClient(CANCEL), cancelUpstream       |
/// | relaying        | upstreamEnded (once)                    | relaying        | resumeClientBody if stalled               |
/// | relaying        | upstreamFailed                          | closed          | resetClient(INTERNAL_ERROR)               |
/// | before relaying | refused / tokenFailed / upstreamFailed  | answeredLocally | cancelTimer, (cancelUpstream,) releaseBuffers, answer |
/// | receivingHead, routing | tick past the head deadline      | answeredLocally | … answer(headTimeout)                     |
/// | before forwarding | tick past the grpc-timeout deadline   | answeredLocally | … answer(deadline)                        |
/// | answeredLocally | answerSent, request still open          | answeredLocally | resetClient(NO_ERROR)                     |
/// | answeredLocally, closed | data                            | same            | discard (no stream credit back)           |
/// | any             | streamClosed (once)                     | closed          | cancelTimer, (cancelUpstream,) releaseBuffers, finish |
///
/// Anything else is illegal for its phase and returns no action (a late token for a call that
/// was answered, an upstream head after the client left, a second streamClosed).
struct H2CallState: Equatable {
    enum Phase: Equatable { case receivingHead, routing, awaitingToken, forwarding, relaying, retrying, answeredLocally, closed }

    /// Why the sidecar answers a call itself.
    enum LocalAnswer: Equatable {
        case failure(ProxyFailure)
        /// A gRPC status with no REST counterpart (UNIMPLEMENTED for an unsupported encoding).
        case grpcStatus(Int, String)
        /// The call's `grpc-timeout` passed before it was forwarded.
        case deadline
        /// The head or first message did not arrive within `headTimeout`.
        case headTimeout
    }

    enum Event: Equatable {
        /// A header block ended: the request head first, then (once) the client's trailers.
        case headBlockEnded(endStream: Bool)
        /// Request body bytes arrived.
        case data
        /// The client ended its side with a DATA frame.
        case dataEnded
        /// The entity is known.
        case routed
        case refused(LocalAnswer)
        case tokenArrived
        case tokenFailed(ProxyFailure)
        /// The upstream's response head; `retryable` when it is UNAUTHENTICATED/401 on the first
        /// attempt and the request can still be sent again.
        case upstreamHead(endStream: Bool, retryable: Bool)
        /// The upstream's response ended (DATA END_STREAM or trailers).
        case upstreamEnded
        /// Response bytes from the upstream are buffered for the client.
        case responseBytes(now: Double)
        /// The client took response bytes; `drained` when none are left buffered.
        case responseTaken(now: Double, drained: Bool)
        /// The upstream stream's body provider found no request bytes and waits.
        case upstreamBodyStalled
        /// The client stream's body provider found no response bytes and waits.
        case clientBodyStalled
        case upstreamFailed(ProxyFailure)
        /// A timer fired (or any moment): answers the call if one of its deadlines passed.
        case tick(now: Double)
        /// Our answer's END_STREAM went out to the client.
        case answerSent
        /// The client stream closed (normally or reset).
        case streamClosed
    }

    enum Action: Equatable {
        /// Read what the client sent so far and work out the entity (gRPC: the first message).
        case route
        case fetchToken
        case startUpstream
        /// The fresh token replaces the refused one; fetch again (`fetchToken` follows).
        case retryWithFreshToken
        case relayHead(endStream: Bool)
        /// The client stream's body provider waited: response bytes (or the end) are there.
        case resumeClientBody
        /// The upstream stream's body provider waited: request bytes (or the end) are there.
        case resumeUpstreamBody
        /// Keep the request bytes for the upstream.
        case buffer
        /// Drop request bytes; the stream's credit is not returned (its window bounds them).
        case discard
        case answer(LocalAnswer)
        case resetClient(errorCode: UInt32)
        case cancelUpstream
        /// Arm the call's timer for `at` (monotonic seconds), replacing any earlier one.
        case armTimer(at: Double)
        case cancelTimer
        case releaseBuffers
        /// Write the call record. Exactly once per call.
        case finish
    }

    static let noError: UInt32 = 0
    static let internalError: UInt32 = 2
    static let cancel: UInt32 = 8

    private(set) var phase: Phase = .receivingHead
    private(set) var requestEnded = false
    private(set) var responseEnded = false
    /// Attempts sent upstream (a retry with a fresh token is the second).
    private(set) var attempts = 0
    private(set) var headerBlocks = 0
    /// Set by `streamClosed`: the call is over for both sides.
    private(set) var streamGone = false
    /// The upstream stream's body provider is waiting for request bytes.
    private(set) var upstreamBodyStalled = false
    /// The client stream's body provider is waiting for response bytes.
    private(set) var clientBodyStalled = false
    /// The head and first message must be complete by this time.
    let headDeadline: Double
    /// A relayed answer the client takes nothing of for this long is reset (a client that
    /// stopped reading must not hold its upstream stream and buffers for ever).
    let ioTimeout: Double
    /// Since when response bytes wait for a client that has taken none of them (nil: none wait).
    private(set) var responseWaitingSince: Double?
    /// From `grpc-timeout`: the call must be forwarded by this time (nil: no deadline).
    private(set) var callDeadline: Double?

    init(now: Double, headTimeout: Double, ioTimeout: Double = 30) {
        headDeadline = now + headTimeout
        self.ioTimeout = ioTimeout
    }

    /// What the request head says, before its `headBlockEnded`: `grpc-timeout` sets the time
    /// by which the call must be forwarded.
    mutating func setCallDeadline(_ at: Double?) {
        guard phase == .receivingHead else { return }
        callDeadline = at
    }

    /// Nothing more goes either way between the client and the upstream.
    var isFinished: Bool { phase == .answeredLocally || phase == .closed }

    /// Feeds one event; returns what the owner must do, in order.
    mutating func handle(_ event: Event) -> [Action] {
        if streamGone { return event == .data ? [.discard] : [] }
        switch event {
        case .headBlockEnded(let endStream):
            headerBlocks += 1
            if endStream { requestEnded = true }
            if headerBlocks == 1 {
                guard phase == .receivingHead else { return [] }
                phase = .routing
                return [.armTimer(at: nextTimer), .route]
            }
            // Trailers from the client: they end the request and are never forwarded.
            requestEnded = true
            switch phase {
            case .routing: return [.route]
            case .forwarding, .relaying: return resumeUpstreamIfStalled()
            default: return []
            }

        case .data:
            switch phase {
            case .routing: return [.buffer, .route]
            case .awaitingToken, .retrying: return [.buffer]
            case .forwarding, .relaying:
                // Whole literals, not concatenations: a constant array literal is made once,
                // statically, and an event on every frame allocates nothing.
                return resumeUpstreamIfStalled().isEmpty ? [.buffer] : [.buffer, .resumeUpstreamBody]
            case .receivingHead, .answeredLocally, .closed: return [.discard]
            }

        case .dataEnded:
            requestEnded = true
            switch phase {
            case .routing: return [.route]
            case .forwarding, .relaying: return resumeUpstreamIfStalled()
            default: return []
            }

        case .upstreamBodyStalled:
            guard phase == .forwarding || phase == .relaying else { return [] }
            upstreamBodyStalled = true
            return []

        case .clientBodyStalled:
            guard phase == .relaying || phase == .answeredLocally else { return [] }
            clientBodyStalled = true
            return []

        case .responseBytes(let now):
            guard phase == .relaying else { return [] }
            var actions = resumeClientIfStalled()
            if responseWaitingSince == nil {
                responseWaitingSince = now
                actions.append(.armTimer(at: now + ioTimeout))
            }
            return actions

        case .responseTaken(let now, let drained):
            guard phase == .relaying, responseWaitingSince != nil else { return [] }
            responseWaitingSince = drained ? nil : now
            return []

        case .routed:
            guard phase == .routing else { return [] }
            phase = .awaitingToken
            return [callDeadline.map { .armTimer(at: $0) } ?? .cancelTimer, .fetchToken]

        case .refused(let why):
            return answer(why)

        case .tokenFailed(let failure):
            guard phase == .awaitingToken || phase == .retrying else { return [] }
            return answer(.failure(failure))

        case .tokenArrived:
            guard phase == .awaitingToken || phase == .retrying else { return [] }
            phase = .forwarding
            attempts += 1
            upstreamBodyStalled = false
            return [.cancelTimer, .startUpstream]

        case .upstreamHead(let endStream, let retryable):
            guard phase == .forwarding else { return [] }
            if retryable && attempts == 1 {
                phase = .retrying
                return [.retryWithFreshToken, .fetchToken]
            }
            phase = .relaying
            if endStream { responseEnded = true }
            return endStream ? [.relayHead(endStream: true)] : [.relayHead(endStream: false)]

        case .upstreamEnded:
            guard phase == .relaying, !responseEnded else { return [] }
            responseEnded = true
            return resumeClientIfStalled()

        case .upstreamFailed(let failure):
            switch phase {
            case .forwarding, .retrying, .awaitingToken: return answer(.failure(failure))
            case .relaying:
                phase = .closed
                return [.resetClient(errorCode: Self.internalError)]
            default: return []
            }

        case .tick(let now):
            switch phase {
            case .receivingHead, .routing:
                if let callDeadline, now >= callDeadline { return answer(.deadline) }
                if now >= headDeadline { return answer(.headTimeout) }
                return [.armTimer(at: nextTimer)]
            case .awaitingToken, .retrying:
                if let callDeadline, now >= callDeadline { return answer(.deadline) }
                return callDeadline.map { [.armTimer(at: $0)] } ?? []
            case .relaying:
                guard let since = responseWaitingSince else { return [] }
                guard now >= since + ioTimeout else { return [.armTimer(at: since + ioTimeout)] }
                phase = .closed
                return [.resetClient(errorCode: Self.cancel), .cancelUpstream]
            default:
                return []
            }

        case .answerSent:
            // RFC 9113 §8.1: after a complete answer the server may reset a request still open
            // with NO_ERROR, so a client that keeps sending stops (its DATA is discarded meanwhile).
            guard phase == .answeredLocally, !requestEnded else { return [] }
            return [.resetClient(errorCode: Self.noError)]

        case .streamClosed:
            streamGone = true
            let wasForwarded = phase == .forwarding || phase == .relaying || phase == .retrying
            phase = .closed
            return wasForwarded ? [.cancelTimer, .cancelUpstream, .releaseBuffers, .finish] : [.cancelTimer, .releaseBuffers, .finish]
        }
    }

    private mutating func resumeUpstreamIfStalled() -> [Action] {
        guard upstreamBodyStalled else { return [] }
        upstreamBodyStalled = false
        return [.resumeUpstreamBody]
    }

    private mutating func resumeClientIfStalled() -> [Action] {
        guard clientBodyStalled else { return [] }
        clientBodyStalled = false
        return [.resumeClientBody]
    }

    /// The sidecar answers the call itself (only before a response head went to the client).
    private mutating func answer(_ why: LocalAnswer) -> [Action] {
        switch phase {
        case .relaying, .answeredLocally, .closed: return []
        default: break
        }
        let wasUpstream = phase == .forwarding || phase == .retrying
        phase = .answeredLocally
        responseEnded = true
        var actions: [Action] = [.cancelTimer]
        if wasUpstream { actions.append(.cancelUpstream) }
        actions.append(.releaseBuffers)
        actions.append(.answer(why))
        return actions
    }

    /// The earlier of the deadlines that apply to the current phase.
    private var nextTimer: Double {
        switch phase {
        case .receivingHead, .routing: return min(headDeadline, callDeadline ?? .infinity)
        default: return callDeadline ?? .infinity
        }
    }
}
