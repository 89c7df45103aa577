import CEvent

/// One call arriving on an HTTP/2 client stream and forwarded on an upstream stream: its
/// headers, the body bytes in flight each way, and where each side stands.
///
/// Both connections hold it while the call lives; the bodies are evbuffers so bytes move
/// between the two sessions without extra copies.
final class H2Call {
    let clientStream: Int32
    unowned let client: HTTP2ProxyConnection

    // Request, as the client sent it.
    var method = ""
    var path = ""
    var contentType = ""
    var grpcEncoding: String?
    var grpcTimeout: Double?
    /// Regular (non-pseudo) request headers, in order, names lower-case as HTTP/2 requires.
    var headers: [(String, String)] = []
    var headerBytes = 0
    var isGRPC: Bool { contentType.hasPrefix("application/grpc") }
    /// The gRPC method's routing rule, looked up once when the headers end.
    var rule: GRPCRouteRule?

    /// Request body bytes received from the client, not yet sent upstream.
    let requestBody: OpaquePointer
    /// The client ended its side.
    var requestEnded = false
    /// Bytes of request body already handed to the upstream (a resend is unsafe past 0).
    var requestBytesSent = 0
    /// Entity and token, once known.
    var key: EntityKey?
    var token: String?
    var routed = false
    var started = 0.0

    // Upstream side.
    weak var upstream: UpstreamH2Connection?
    /// The connection that carried the response: it is owed flow-control credit for response
    /// bytes as the client takes them, even after its stream has closed.
    weak var creditTo: UpstreamH2Connection?
    var upstreamStream: Int32 = -1
    var upstreamDeferred = false
    var attempts = 0
    /// A copy of the request bytes sent upstream, kept (up to `replayLimit`) so the call can be
    /// sent once more with a fresh token if Fleet Engine answers UNAUTHENTICATED.
    let sentCopy: OpaquePointer
    var replayable = true
    static let replayLimit = 64 * 1024

    // Response, as the upstream sends it.
    var responseHeaders: [(String, String)] = []
    var responseTrailers: [(String, String)]?
    var responseHeadReceived = false
    let responseBody: OpaquePointer
    var responseEnded = false
    /// The response head went to the client (from the upstream or the sidecar itself).
    var responseSubmitted = false
    var clientDeferred = false
    /// Set once the client stream closed or the call was answered locally: nothing more goes
    /// either way.
    var finished = false
    var deadline: ScheduledWork?
    var status = 0

    init(clientStream: Int32, client: HTTP2ProxyConnection) {
        self.clientStream = clientStream
        self.client = client
        requestBody = evbuffer_new()
        responseBody = evbuffer_new()
        sentCopy = evbuffer_new()
    }

    deinit {
        deadline?.cancel()
        evbuffer_free(requestBody)
        evbuffer_free(responseBody)
        evbuffer_free(sentCopy)
    }

    /// Puts the request bytes already sent back in front of the unsent ones, for a resend.
    /// False when the copy was not kept (body too large).
    func rewindRequest() -> Bool {
        guard replayable else { return false }
        evbuffer_prepend_buffer(requestBody, sentCopy)
        requestBytesSent = 0
        responseHeaders.removeAll()
        responseHeadReceived = false
        responseEnded = false
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
