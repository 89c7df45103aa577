/// The gRPC length-prefixed message framing (gRPC over HTTP/2, "Length-Prefixed-Message"):
/// a compressed flag byte (0 or 1), a 4-byte big-endian length, then that many bytes.
///
/// The sidecar reads only the first message of a request stream, to route it; the stream's
/// DATA is forwarded byte for byte whatever this says, once a route is known.
package enum GRPCMessageFrame {
    /// Flag byte plus length.
    package static let headerLength = 5

    /// The largest first message the sidecar buffers to route a call (4 MiB, gRPC's default
    /// receive limit). Fleet Engine requests are far smaller.
    static let defaultMaxMessageLength = 4 * 1024 * 1024

    /// What the bytes received so far on a stream say about its first message.
    package enum FirstMessage: Equatable, Sendable {
        /// Wait for more DATA: the first message ends at byte `total` (or, while the header is
        /// still incomplete, at least there).
        case needMore(total: Int)
        /// The first message is complete: `payload` indexes the buffer given, and is to be
        /// inflated before reading when `compressed` is set.
        case complete(compressed: Bool, payload: Range<Int>)
        /// Not a gRPC message (`.malformedRequest`) or longer than allowed (`.requestTooLarge`).
        case invalid(ProxyFailure)
    }

    /// Looks at the start of a request stream's bytes. Decides as soon as the header is in:
    /// an oversized message is refused before its body is waited for.
    package static func firstMessage(
        in received: UnsafeRawBufferPointer, maxLength: Int = defaultMaxMessageLength
    ) -> FirstMessage {
        guard received.count >= headerLength else {
            if let flag = received.first, flag > 1 { return .invalid(badFlag(flag)) }
            return .needMore(total: headerLength)
        }
        let flag = received[0]
        guard flag <= 1 else { return .invalid(badFlag(flag)) }
        let length = UInt32(bigEndian: received.loadUnaligned(fromByteOffset: 1, as: UInt32.self))
        guard UInt64(length) <= UInt64(max(maxLength, 0)) else {
            return .invalid(.requestTooLarge(
                "gRPC request message of \(length) bytes is over the \(maxLength) bytes the sidecar reads to route a call"))
        }
        let end = headerLength + Int(length)
        guard received.count >= end else { return .needMore(total: end) }
        return .complete(compressed: flag == 1, payload: headerLength..<end)
    }

    private static func badFlag(_ flag: UInt8) -> ProxyFailure {
        .malformedRequest("gRPC message starts with compressed-flag \(flag) (only 0 and 1 are defined)")
    }
}
