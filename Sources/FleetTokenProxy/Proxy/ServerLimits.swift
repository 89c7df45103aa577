/// Bounds on what client connections may hold or take (docs/CONTRACT.md §7: bounded memory and time).
/// Stated once here; every connection and stream enforces them.
package struct ServerLimits: Sendable {
    /// Request line plus headers (HTTP/1.1), or one stream's header block (HTTP/2).
    package var maxHeadBytes = 32 * 1024
    package var maxHeaderCount = 100
    /// A request body larger than this is refused with 413. Fleet Engine requests are small.
    var maxRequestBodyBytes = 8 * 1024 * 1024
    /// A whole request head must arrive within this many seconds of its first byte (or of the
    /// connection's start), however it trickles in: nginx's `client_header_timeout`.
    var headTimeout: Double = 10
    /// A keep-alive connection with no request for this long is closed.
    var idleTimeout: Double = 60
    /// Time allowed between two reads of a request body (slow-client bound) and two writes of
    /// a response.
    var ioTimeout: Double = 30
    /// Open client connections; the listener pauses above it.
    var maxConnections = 4096
    /// Above this many bytes queued towards one side, reading from the other side stops.
    var bufferHighWater = 256 * 1024
    /// Request bytes one client connection may hold that are not yet forwarded (first gRPC
    /// messages of streams still being routed, bodies waiting for a token), all streams
    /// together. Past it new work on the connection is refused.
    var maxConnectionBufferedBytes = 8 * 1024 * 1024
    /// The largest first gRPC message a stream may send before it is routed (gRPC's default
    /// receive limit); the first message is all the sidecar reads of a request.
    var maxFirstMessageBytes = 4 * 1024 * 1024
    /// Request bytes held by all client connections together (`--max-buffered-bytes`). Past
    /// it the sidecar refuses new work with 503 / RESOURCE_EXHAUSTED instead of growing.
    package var maxBufferedBytes = 256 * 1024 * 1024
    /// Most HTTP/2 streams one client connection may have open at once.
    var maxConcurrentStreams = 100

    package init() {}
}
