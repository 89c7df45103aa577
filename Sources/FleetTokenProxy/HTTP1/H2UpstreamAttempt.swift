/// One send of an HTTP/1.1 client's REST call over the HTTP/2 upstream (`--upstream-protocol
/// h2`): the `UpstreamExchangeDelegate` its upstream half reports to, handing every report to
/// the `HTTP1ClientConnection` whose call it is. A new one for each send (a resend or a 401
/// retry), so a late report of an earlier send is recognised by identity and ignored.
///
/// `connection` is strong and cleared when the connection lets go of the attempt (the
/// upstream half drops its own reference to this one when the exchange ends), which breaks the
/// cycle.
final class H2UpstreamAttempt: UpstreamExchangeDelegate {
    var connection: HTTP1ClientConnection?
    /// The upstream half, once started; kept until the call lets go of the attempt.
    var upstream: UpstreamExchange?
    let requestMethod: String
    let requestPath: String
    /// The client's head fields and the body length the upstream is told: translated
    /// (`H2MessageTranslation.requestFields`) straight into the head submitted.
    private let headFields: HeadFields
    private let bodyLength: Int?
    let requestToken: String
    let requestHasBody: Bool
    /// Request body bytes this send handed to the upstream.
    var bodyBytesSent = 0
    /// How the relayed answer's DATA is written to the client, once its head was relayed.
    var relayFraming: HTTP1Exchange.Relay.Framing?
    /// Response bytes written to the client while its output was over the high-water mark:
    /// credited to the upstream once the client catches up.
    var owedCredit = 0

    init(connection: HTTP1ClientConnection, method: String, path: String, fields: HeadFields, bodyLength: Int?, token: String) {
        self.connection = connection
        requestMethod = method
        requestPath = path
        headFields = fields
        self.bodyLength = bodyLength
        requestToken = token
        requestHasBody = (bodyLength ?? 0) > 0
    }

    var requestFields: H2HeaderList {
        H2MessageTranslation.requestFields(of: headFields, bodyLength: bodyLength)
    }

    func appendRequestFields(to list: inout H2HeaderList) {
        H2MessageTranslation.appendRequestFields(of: headFields, bodyLength: bodyLength, to: &list)
    }

    func pullRequestBody(into buffer: UnsafeMutableRawBufferPointer) -> RequestBodyPull {
        connection?.h2PullRequestBody(self, into: buffer) ?? .bytes(0, end: true)
    }

    func upstreamHeaderBlock(_ fields: H2HeaderList, endStream: Bool) {
        connection?.h2HeaderBlock(self, fields, endStream: endStream)
    }

    func upstreamData(_ bytes: UnsafeRawBufferPointer) {
        connection?.h2Data(self, bytes)
    }

    func upstreamDataEnded() {
        connection?.h2AnswerEnded(self)
    }

    func upstreamClosed(_ end: UpstreamEnd) {
        connection?.h2Closed(self, end)
    }
}
