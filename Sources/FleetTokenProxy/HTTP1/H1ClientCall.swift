import Logging

/// The client half of one REST call on an HTTP/1.1 client connection: what the client sent
/// (its head, its body held or still arriving), its entity, token, record and budget, and the
/// upstream exchange it drives. Owned by its `HTTP1ClientConnection` (`inFlight`), which alone
/// writes it and carries out what the connection's `HTTP1Exchange` decides. As `H2ClientCall`
/// is for an HTTP/2 client, it meets its upstream half (an `H2UpstreamStream` or an
/// `H1UpstreamExchange`) only through `UpstreamExchange` (`upstream`) and
/// `UpstreamExchangeDelegate` (the reports, handed to the connection): the client half never
/// knows which upstream protocol carries the call.
///
/// One object for every send of the call (a resend, the 401 retry): the connection cancels
/// an exchange before it starts the next one, or the exchange had ended, and neither reports
/// again, so every report is about the current send. `connection` is strong and cleared when
/// the call ends (`HTTP1ClientConnection.endCall`), which breaks the cycle through
/// `upstream`; it is not weak, which would give the connection a side table and slow every
/// retain of it.
final class H1ClientCall: UpstreamExchangeDelegate {
    /// How the request body arrives from the client, or that the sidecar holds it whole.
    enum RequestBody {
        /// Content-Length bytes still to come from the client: a body read whole before the
        /// call goes on (up to `ReplayPolicy.bodyBound`), or one that streams (0: all sent on).
        case remaining(Int)
        /// A chunked body being decoded into `held`.
        case chunked(ChunkedBodyScanner)
        /// The whole body is in `held` (none, a short declared one, a decoded chunked one):
        /// forwarded with a Content-Length, and kept to send the call again.
        case held
    }

    var connection: HTTP1ClientConnection?
    let head: RequestHead
    let key: EntityKey
    var record: CallRecord
    var body: RequestBody
    /// The body's bytes the sidecar holds: being decoded (`.chunked`) or whole (`.held`).
    var held: [UInt8] = []
    var token: String?
    /// The `x-goog-user-project` the call carries (`QuotaProjectField`), set with its token.
    var quotaProject: String?
    /// Bytes reserved from the process-wide buffer budget for this call.
    var reserved = 0
    /// The current send's upstream half; nil between sends and once the call ends.
    var upstream: UpstreamExchange?
    /// Sends started, so a send whose start reported its own end (and was followed by
    /// another) is not taken for the current one.
    var sendsStarted = 0
    /// The body's length as the current send tells the upstream: what is held, or declared and
    /// still to stream, as it was when the send began (pulls shrink `body` as they go); nil
    /// for a request that has no body and declared none.
    private(set) var bodyLength: Int?
    /// Held body bytes the current send took.
    var heldBytesSent = 0
    /// Body bytes of a streamed body the current send took from the client: while none, the
    /// request can still go again whole.
    var streamedBytesSent = 0
    /// How the relayed answer's bytes are written to the client, once its head was relayed.
    var relayFraming: HTTP1Exchange.Relay.Framing?
    /// Answer bytes written to the client while its output was over the high-water mark:
    /// credited to the upstream once the client catches up.
    var owedCredit = 0

    /// The record is built here, where it stays, rather than copied in.
    init(connection: HTTP1ClientConnection, head: RequestHead, key: EntityKey, started: Double, body: RequestBody) {
        self.connection = connection
        self.head = head
        self.key = key
        record = CallRecord(clientProtocol: .http1, started: started)
        record.method = head.method
        // The target becomes a String only when a line is written (see `takeRecord`).
        record.entityType = key.type.rawValue
        self.body = body
    }

    /// The record, moved out to be written (a placeholder of literals takes its place), not
    /// copied.
    @inline(__always)
    func takeRecord(core: ProxyCore, logger: Logger) -> CallRecord {
        var taken = CallRecord(clientProtocol: .http1, started: 0)
        swap(&taken, &record)
        if CallRecord.writesLine(core: core, logger: logger) { taken.target = head.target }
        return taken
    }

    /// A fresh send: nothing of it has left, nothing of its answer arrived.
    func beginSend() {
        switch body {
        case .held: bodyLength = head.framing == .none ? nil : held.count
        case .remaining(let n): bodyLength = n
        case .chunked: bodyLength = nil
        }
        sendsStarted += 1
        heldBytesSent = 0
        streamedBytesSent = 0
        relayFraming = nil
        owedCredit = 0
    }

    // MARK: UpstreamExchangeDelegate — the request, as either upstream protocol sends it

    var requestMethod: String { head.method }
    var requestPath: String { head.target }

    /// The head fields translated (`H2MessageTranslation.requestFields`) straight into the head
    /// submitted: no list of its own per send.
    func appendRequestFields(to list: inout H2HeaderList) {
        H2MessageTranslation.appendRequestFields(of: head.fields, bodyLength: bodyLength, quotaProject: quotaProject, to: &list)
    }

    /// The sidecar's own parse accepted the head (docs/CONTRACT.md §7).
    var http1Refusal: ProxyFailure? { nil }

    var requestDeclaredLength: Int? { bodyLength }

    /// The request line, the upstream's own Host, the end-to-end fields (no hop-by-hop,
    /// framing, Host or Authorization field of the client's is copied), the framing from the
    /// sidecar's own parse, and the entity's token.
    func writeRequestHead(host: String, framing: H1MessageTranslation.RequestFraming, to out: inout HeadWriter) {
        out.write(head.method)
        out.byte(0x20)
        head.withTarget { out.write($0) }
        out.write(literal: " HTTP/1.1\r\nHost: ")
        out.write(host)
        out.write(literal: "\r\n")
        if let quotaProject {
            HopByHop.writeEndToEndFields(of: head.fields, dropping: { HopByHop.dropFromRequest($0) || QuotaProjectField.isOne($0) }, to: &out)
            QuotaProjectField.write(quotaProject, to: &out)
        } else {
            HopByHop.writeEndToEndFields(of: head.fields, dropping: HopByHop.dropFromRequest, to: &out)
        }
        H1MessageTranslation.writeFramingAndAuthorization(framing, token: requestToken, to: &out)
    }

    var requestToken: String { token ?? "" }

    var requestHasBody: Bool {
        switch body {
        case .held: return !held.isEmpty
        case .remaining(let n): return n > 0
        case .chunked: return true
        }
    }

    func pullRequestBody(upTo max: Int, _ take: (ByteView) -> Void) -> RequestBodyPull {
        connection?.pullRequestBody(self, upTo: max, take) ?? .bytes(0, end: true)
    }

    // MARK: UpstreamExchangeDelegate — the answer, handed to the connection

    func upstreamHeaderBlock(_ head: AnswerHead, endStream: Bool) {
        connection?.upstreamHeaderBlock(self, head, endStream: endStream)
    }

    func upstreamData(_ bytes: ByteView) {
        guard let connection else {
            // A call that ended takes nothing: the bytes go back as credit.
            upstream?.responseTaken(count: bytes.count)
            return
        }
        connection.upstreamData(self, bytes)
    }

    func upstreamDataEnded() {
        connection?.upstreamDataEnded(self)
    }

    func upstreamClosed(_ end: UpstreamEnd) {
        connection?.upstreamClosed(self, end)
    }
}
