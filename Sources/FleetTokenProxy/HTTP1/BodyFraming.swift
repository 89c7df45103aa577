/// How a message body is delimited (RFC 9112 §6).
package enum BodyFraming: Equatable, Sendable {
    /// No body follows the head.
    case none
    /// Exactly this many bytes follow the head.
    case contentLength(Int)
    /// The chunked transfer coding; `ChunkedBodyScanner` finds where it ends.
    case chunked
    /// The body ends when the sender closes the connection (responses only), so the
    /// connection cannot carry another message.
    case untilClose
}
