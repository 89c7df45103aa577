/// The client half of one call arriving on an HTTP/2 client stream: what the client sent and
/// is owed, where the call stands (`state`), its timer and its record. Owned by its
/// `HTTP2ClientConnection`, which alone writes it; joined to its upstream half only through
/// `UpstreamExchange` (`upstream`, which it drives) and `UpstreamExchangeDelegate` (what the
/// upstream half reports, handed to the connection).
///
/// The bodies are `EventBuffer`s, so bytes move between the two sessions without extra copies.
/// `connection` and `upstream` are strong references, dropped when the client stream closes
/// (the connection clears `connection`, the call's finish drops `upstream`), which breaks the
/// cycles through the call. They are not `weak`: a weak reference gives its object a side
/// table, and every retain and release would then take the runtime's slow path.
final class H2ClientCall: UpstreamExchangeDelegate {
    let clientStream: Int32
    var connection: HTTP2ClientConnection?
    /// Unchecked exclusivity (docs/ARCHITECTURE.md, State machines): the machine is a value
    /// whose mutating methods touch nothing but itself and return before the shell acts on
    /// their action, all on the loop's one thread, so no two accesses to it can overlap; the
    /// runtime's check of each event (a thread-local access set, about 120 instructions) could
    /// never fire.
    @exclusivity(unchecked) var state: H2CallState

    // Request, as the client sent it.
    var method = ""
    var path = ""
    /// The content-type is `application/grpc` or one of its `+format` variants.
    var isGRPC = false
    var grpcEncoding: String?
    var grpcTimeout: Double?
    /// Regular (non-pseudo) request headers, in order, names lower-case as HTTP/2 requires,
    /// kept as the bytes they arrived as.
    var headers = H2HeaderList()
    /// The gRPC method's routing rule, looked up once when the headers end.
    var rule: GRPCRouteRule?

    /// Request body bytes received from the client, not yet sent upstream.
    let requestBody = EventBuffer()
    /// A copy of the request bytes sent upstream, kept while the call machine says so, for a
    /// retry with a fresh token.
    let sentCopy = EventBuffer()
    /// Bytes of request body the current exchange took.
    var requestBytesSent = 0
    /// Request body bytes received from the client in all.
    var requestBytesReceived = 0
    /// The most request bytes any exchange took.
    var requestBytesForwarded = 0
    /// Request bytes the client has been given stream credit for.
    var requestBytesCredited = 0
    /// Request bytes counted against the connection's and the process's budgets.
    var bytesReserved = 0
    /// Entity and token, once known.
    var key: EntityKey?
    var token: String?
    /// The `x-goog-user-project` the call carries (`QuotaProjectField`), set with its token.
    var quotaProject: String?
    var record: CallRecord
    /// The one timer of the call (head timeout, then `grpc-timeout` until forwarded, then the
    /// relayed answer's `ioTimeout`), made only when a deadline is still wanted at the end of
    /// the callbacks that asked for it (`timerDue`): most calls finish first and never make one.
    var timer: LoopWakeup?
    /// When the call's machine wants its timer to fire (monotonic seconds), nil for never.
    var timerDue: Double?
    /// The call waits in its connection's list of timers to arm.
    var timerListed = false

    /// The current upstream exchange, kept after it ends until the call finishes: it is owed
    /// credit for response bytes as the client takes them.
    var upstream: UpstreamExchange?

    // Response, as the upstream sends it (or the sidecar's own answer).
    let responseBody = EventBuffer()
    /// Trailers to send once the body has gone. They share the upstream session's block
    /// storage until then.
    var responseTrailers: H2HeaderList?

    init(clientStream: Int32, connection: HTTP2ClientConnection, state: H2CallState, record: CallRecord) {
        self.clientStream = clientStream
        self.connection = connection
        self.state = state
        self.record = record
    }

    deinit {
        timer?.cancel()
    }

    /// Request bytes held for the upstream (unsent, and the copy kept for a retry).
    var heldRequestBytes: Int { requestBody.count + sentCopy.count }

    /// Puts the request bytes already sent back in front of the unsent ones, for a retry.
    func rewindRequest() {
        requestBody.prepend(sentCopy)
        requestBytesSent = 0
    }

    /// Seconds from a `grpc-timeout` value, nil when malformed.
    static func grpcTimeout(_ value: String) -> Double? {
        // "1S", "250m": up to 8 digits and a unit (gRPC over HTTP/2 spec).
        guard let unit = value.last, value.count >= 2, value.count <= 9,
              let amount = Double(value.dropLast()), value.dropLast().allSatisfy(\.isNumber) else { return nil }
        switch unit {
        case "H": return amount * 3600
        case "M": return amount * 60
        case "S": return amount
        case "m": return amount / 1e3
        case "u": return amount / 1e6
        case "n": return amount / 1e9
        default: return nil
        }
    }

    // MARK: UpstreamExchangeDelegate — handed to the connection that owns the call

    var requestMethod: String { method }
    var requestPath: String { path }
    func appendRequestFields(to list: inout H2HeaderList) {
        guard let quotaProject else { return list.append(contentsOf: headers) }
        headers.forEach { name, value in
            if !QuotaProjectField.isOne(name) { list.append(name: name, value: value) }
            return true
        }
        list.append(name: QuotaProjectField.name, value: quotaProject)
    }
    var http1Refusal: ProxyFailure? { H1MessageTranslation.refusal(method: method, path: path, fields: headers) }
    var requestDeclaredLength: Int? { H1MessageTranslation.declaredLength(headers) }
    func writeRequestHead(host: String, framing: H1MessageTranslation.RequestFraming, to out: inout HeadWriter) {
        H1MessageTranslation.writeRequestHead(method: method, path: path, fields: headers, host: host, token: requestToken,
                                              framing: framing, quotaProject: quotaProject, to: &out)
    }
    var requestToken: String { token ?? "" }
    var requestHasBody: Bool { !state.requestEnded || !requestBody.isEmpty }

    func pullRequestBody(upTo max: Int, _ take: (ByteView) -> Void) -> RequestBodyPull {
        connection?.pullRequestBody(self, upTo: max, take) ?? .bytes(0, end: true)
    }

    func upstreamHeaderBlock(_ head: AnswerHead, endStream: Bool) {
        connection?.upstreamHeaderBlock(self, head, endStream: endStream)
    }

    func upstreamData(_ bytes: ByteView) {
        connection?.upstreamData(self, bytes)
    }

    func upstreamDataEnded() {
        connection?.upstreamDataEnded(self)
    }

    func upstreamClosed(_ end: UpstreamEnd) {
        connection?.upstreamClosed(self, end)
    }
}
