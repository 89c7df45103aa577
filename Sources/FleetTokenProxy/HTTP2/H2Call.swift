import CEvent

/// One call arriving on an HTTP/2 client stream and forwarded on an upstream stream: its
/// headers and the body bytes in flight each way. Where the call stands lives in one place,
/// `state` (`H2CallState`); both connections feed it events and act on what it returns.
///
/// Both connections hold the call while it lives; the bodies are evbuffers so bytes move
/// between the two sessions without extra copies. The call's references to the connections are
/// strong but dropped where the connections let go of the call: the client connection clears
/// `client` when the stream leaves its table (closed, or the connection closed), the upstream
/// clears `upstream` when it cancels, closes or loses the stream. They are not `weak`: a weak
/// reference gives its object a side table, and every retain and release of a connection
/// would then take the runtime's slow path, several times per frame.
final class H2Call {
    let clientStream: Int32
    var client: HTTP2ClientConnection?
    var state: H2CallState

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
    let requestBody: OpaquePointer
    /// Bytes of request body already handed to the upstream in this attempt (a resend is
    /// unsafe past 0).
    var requestBytesSent = 0
    /// Request body bytes received from the client in all.
    var requestBytesReceived = 0
    /// The most request bytes any attempt has handed to the upstream.
    var requestBytesForwarded = 0
    /// Request bytes the client has been given stream credit for.
    var requestBytesCredited = 0
    /// Request bytes counted against the connection's and the process's budgets.
    var bytesReserved = 0
    /// Entity and token, once known.
    var key: EntityKey?
    var token: String?
    var record: CallRecord
    /// The one timer of the call (head timeout, then `grpc-timeout` until forwarded, then the
    /// relayed answer's `ioTimeout`), made only when a deadline is still wanted at the end of
    /// the callbacks that asked for it (`timerDue`): most calls finish first and never make one.
    var timer: LoopWakeup?
    /// When the call's machine wants its timer to fire (monotonic seconds), nil for never.
    var timerDue: Double?
    /// The call waits in its connection's list of timers to arm.
    var timerListed = false

    // Upstream side.
    var upstream: HTTP2UpstreamConnection?
    /// The connection that carried the response: it is owed flow-control credit for response
    /// bytes as the client takes them, even after its stream has closed (kept until the call
    /// goes; a connection the pool discarded has no session and takes no credit).
    var creditTo: HTTP2UpstreamConnection?
    var upstreamStream: Int32 = -1
    /// Times the call was handed to an upstream connection (a stream refused or a connection
    /// lost before any byte left is tried again, up to three times).
    var upstreamStarts = 0
    /// A copy of the request bytes sent upstream, kept (up to `replayLimit`) so the call can be
    /// sent once more with a fresh token if Fleet Engine answers UNAUTHENTICATED.
    let sentCopy: OpaquePointer
    var replayable = true
    static let replayLimit = 64 * 1024

    /// Response bytes received from the upstream, taken by the client, and given back to the
    /// upstream as stream credit (`HTTP2UpstreamConnection.creditResponse`).
    var responseBytesReceived = 0
    var responseBytesTaken = 0
    var responseBytesCredited = 0

    // Response, as the upstream sends it.
    var responseHeaders = H2HeaderList()
    var responseTrailers: H2HeaderList?
    let responseBody: OpaquePointer

    init(clientStream: Int32, client: HTTP2ClientConnection, state: H2CallState, record: CallRecord) {
        self.clientStream = clientStream
        self.client = client
        self.state = state
        self.record = record
        requestBody = evbuffer_new()
        responseBody = evbuffer_new()
        sentCopy = evbuffer_new()
    }

    deinit {
        timer?.cancel()
        evbuffer_free(requestBody)
        evbuffer_free(responseBody)
        evbuffer_free(sentCopy)
    }

    /// Request bytes held for the upstream (unsent, and the copy kept for a resend).
    var heldRequestBytes: Int { evbuffer_get_length(requestBody) + evbuffer_get_length(sentCopy) }

    /// Puts the request bytes already sent back in front of the unsent ones, for a resend.
    /// False when the copy was not kept (body too large).
    func rewindRequest() -> Bool {
        guard replayable else { return false }
        evbuffer_prepend_buffer(requestBody, sentCopy)
        requestBytesSent = 0
        responseHeaders.removeAll()
        upstreamStream = -1
        return true
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
}
