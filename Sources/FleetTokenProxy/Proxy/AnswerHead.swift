/// A header block of an upstream answer (its head, an interim head, or its trailers) as the
/// upstream protocol delivered it: the one type both client halves read at the
/// `UpstreamExchangeDelegate` boundary. Each client half writes its own protocol's head from
/// either case directly, so no answer is turned into the other protocol's bytes only to be
/// parsed again.
///
/// Lent for the call that hands it over (an HTTP/2 block lives in the upstream session's
/// storage): what is kept is copied out.
enum AnswerHead {
    /// An HTTP/1.1 answer's head as `HTTP1Parser` read it; `framing`: its body's, for the
    /// request's method (`ResponseHead.framing(requestMethod:)`).
    case http1(ResponseHead, framing: BodyFraming)
    /// An HTTP/2 header block: a head with its `:status`, or trailers.
    case http2(H2HeaderList)

    /// What the call machines and the call's record decide on, read in one walk of the fields
    /// (bounded by the block's field count): the status (nil when there is not exactly one valid
    /// `:status`: trailers, a malformed HTTP/2 head); whether the upstream refused the call's
    /// token: HTTP 401, or gRPC status 16 (UNAUTHENTICATED) in a trailers-only answer
    /// (docs/CONTRACT.md §4); and the block's first `grpc-status` as `GRPCStatus` reads it (nil
    /// when it has none), which a trailers-only answer or trailers give the client (§5, "What a
    /// call is recorded as").
    var facts: (status: Int?, unauthenticated: Bool, grpcStatus: Int?) {
        switch self {
        case .http1(let head, _):
            return (head.status, head.status == 401, nil)
        case .http2(let fields):
            var status: Int?
            var statusFields = 0
            var grpcStatus: Int?
            fields.forEach { name, value in
                if name == ":status" {
                    statusFields += 1
                    status = value.count == 3 ? H2MessageTranslation.decimal(value).flatMap { $0 >= 100 ? $0 : nil } : nil
                } else if grpcStatus == nil && name == "grpc-status" {
                    grpcStatus = GRPCStatus.parse(value)
                }
                return true
            }
            // RFC 9113 §8.3.2: exactly one :status.
            let valid = statusFields == 1 ? status : nil
            return (valid, valid == 401 || grpcStatus == GRPCStatus.unauthenticated, grpcStatus)
        }
    }

    /// How the answer's body is framed for the client of a request with `method`, and the
    /// framing its fields declare (a HEAD or 304 answer keeps the length it declares): an
    /// HTTP/1.1 head's own; for an HTTP/2 head (RFC 9112 §6.3's rules for which answers have
    /// no body), its `content-length` when it has one, else a body of unknown length (relayed
    /// chunked to an HTTP/1.1 client), and an empty one after END_STREAM (nghttp2 resets a
    /// stream whose DATA does not match its `content-length`).
    func framing(requestMethod method: String, status: Int, endStream: Bool) -> (framing: BodyFraming, declared: BodyFraming) {
        switch self {
        case .http1(let head, let framing):
            return (framing, head.declaredFraming)
        case .http2(let fields):
            let length = fields.firstNonNil { name, value in name == "content-length" ? H2MessageTranslation.decimal(value) : nil }
            let declared = length.map { BodyFraming.contentLength($0) } ?? .chunked
            if status < 200 || status == 204 || status == 304 || method == "HEAD" { return (.none, declared) }
            return (endStream ? .contentLength(0) : declared, declared)
        }
    }
}
