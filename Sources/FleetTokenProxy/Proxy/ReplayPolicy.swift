/// When a call may be sent to Fleet Engine again (docs/CONTRACT.md §7, "a call is sent twice
/// only when that cannot run it twice", and §4, revoked tokens): the one rule both call
/// machines, `HTTP1Exchange` and `H2CallState`, ask before every resend, whichever protocols
/// the client and the upstream speak. A value with no state: the machines hold the facts
/// and pass them in.
///
/// | why the exchange ended | resent when |
/// |---|---|
/// | `unauthenticated` (401, or a trailers-only UNAUTHENTICATED) | the request is intact and its token was not retried yet |
/// | `unprocessed` (REFUSED_STREAM, past a GOAWAY's last stream, never sent) | the request is intact, fewer than `maxSends` sends |
/// | `connectionLost` (the request, or part of it, may have reached Fleet Engine) | as `unprocessed`, and the method is idempotent |
/// | `declined` (the upstream turned out HTTP/1.1-only before a byte left) | as `unprocessed` (an HTTP/1.1 client's REST call does not count it as a send: it goes by HTTP/1.1 next) |
///
/// Nothing else is ever resent: a reset stream, a fresh connection that broke, an answer
/// that had begun.
struct ReplayPolicy: Equatable {
    /// Request body bytes the sidecar keeps to send a call again: a body with a declared
    /// length up to this is read whole before the call goes upstream, whatever the segments
    /// it arrives in; an HTTP/2 client's sent bytes are copied up to this.
    static let bodyBound = 64 * 1024
    /// Upstream exchanges one call may start, the 401 retry aside.
    static let maxSends = 3

    enum Why: Equatable {
        /// Fleet Engine refused the call's token: drop it, fetch a fresh one, send again.
        case unauthenticated
        /// Fleet Engine cannot have acted on the request.
        case unprocessed
        /// The connection went while Fleet Engine may have been acting on the request.
        case connectionLost
        /// The upstream turned out to speak only HTTP/1.1 before the exchange sent a byte.
        case declined
    }

    /// What a call's machine knows of the call when it asks.
    struct Call: Equatable {
        /// RFC 9110 §9.2.2: sending it twice has the effect of sending it once.
        var isIdempotent: Bool
        /// Upstream exchanges started so far, this one included.
        var sends: Int
        /// The one retry with a fresh token was made.
        var tokenRetried: Bool
        /// The sidecar can send the whole request again: it holds (or kept a copy of) every
        /// byte that left, and the rest is still to come from the client.
        var requestIntact: Bool
    }

    static func mayResend(_ why: Why, _ call: Call) -> Bool {
        guard call.requestIntact else { return false }
        switch why {
        case .unauthenticated: return !call.tokenRetried
        case .unprocessed, .declined: return call.sends < maxSends
        case .connectionLost: return call.isIdempotent && call.sends < maxSends
        }
    }

    /// RFC 9110 §9.2.2's idempotent methods.
    static func isIdempotent(_ method: String) -> Bool {
        switch method {
        case "GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE": return true
        default: return false
        }
    }
}
