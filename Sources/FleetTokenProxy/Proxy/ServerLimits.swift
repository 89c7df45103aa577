/// Bounds on what one client connection may hold or take (SPEC §7: bounded memory).
public struct ServerLimits: Sendable {
    /// Request line plus headers.
    public var maxHeadBytes = 32 * 1024
    public var maxHeaderCount = 100
    /// A request body larger than this is refused with 413. Fleet Engine requests are small.
    public var maxRequestBodyBytes = 8 * 1024 * 1024
    /// A keep-alive connection with no request for this long is closed.
    public var idleTimeout: Double = 60
    /// Time allowed between two reads of a request (slow-client bound) and two writes of a response.
    public var ioTimeout: Double = 30
    /// Open client connections; the listener pauses above it.
    public var maxConnections = 4096
    /// Above this many bytes queued towards one side, reading from the other side stops.
    public var bufferHighWater = 256 * 1024

    public init() {}
}
