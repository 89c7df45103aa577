import CNghttp2

/// The abuse limits set on every nghttp2 session, named here instead of left to the library's
/// defaults, so that what bounds a hostile peer's memory and work (docs/CONTRACT.md §7) is seen
/// in one place and pinned by Tests/grpc/test_adversarial_h2.py. Streams open at once are
/// SETTINGS (`H2Session.submitSettings`), header lists `H2Session`'s own bounds.
struct H2Limits {
    /// SETTINGS entries in one frame; more ends the connection (GOAWAY ENHANCE_YOUR_CALM). RFC 9113
    /// and its extensions define 8 settings: 32 (nghttp2's default) leaves room for repeats only.
    var maxSettingsEntries = 32
    /// SETTINGS and PING ACKs owed to a peer that does not read; more ends the connection. A real
    /// client waits for its PING's ACK; nghttp2's 1000 would let each of 4096 connections keep a
    /// thousand queued frames.
    var maxOutboundAcks = 100
    /// The largest header block sent, as nghttp2's HPACK worst case counts it. The sidecar sends
    /// only blocks it accepted under `H2Session.maxHeaderListBytes` (64 KiB at most, counting 32
    /// bytes a field where this counts 12) plus its own `authorization`: past this is a defect.
    var maxSendHeaderBlockBytes = 64 * 1024
    /// HPACK encoder table: a peer announcing a larger SETTINGS_HEADER_TABLE_SIZE does not make
    /// the sidecar keep more than RFC 9113's default per connection.
    var maxDeflateDynamicTableBytes = 4096
    /// Pushed streams kept by the upstream (client) side: none. The sidecar never uses server
    /// push, so a PUSH_PROMISE is answered with RST_STREAM and holds nothing.
    var maxReservedRemoteStreams: UInt32 = 0
    /// RST_STREAMs a client may send at once (token bucket, server side; past it GOAWAY): twice
    /// the 100 streams a connection may open, so a client can cancel all of them twice in a row.
    /// nghttp2's 1000 lets a rapid reset (CVE-2023-44487) start ten times more calls for free.
    var streamResetBurst: UInt64 = 200
    /// RST_STREAMs a second refilling the bucket: nghttp2's default; a client cancelling more
    /// than 33 calls a second for long is not making calls.
    var streamResetsPerSecond: UInt64 = 33
    /// CONTINUATION frames after one HEADERS; more ends the connection (CVE-2024-28182). Nine
    /// frames of 16 KiB hold far more than a 32 KiB header list; a real encoder fills its frames.
    var maxContinuations = 8

    /// Writes the limits into `option` before a session is made from it. Each side ignores the
    /// ones that are not its own (reset rate: server; reserved streams: client).
    func apply(to option: OpaquePointer) {
        nghttp2_option_set_max_settings(option, maxSettingsEntries)
        nghttp2_option_set_max_outbound_ack(option, maxOutboundAcks)
        nghttp2_option_set_max_send_header_block_length(option, maxSendHeaderBlockBytes)
        nghttp2_option_set_max_deflate_dynamic_table_size(option, maxDeflateDynamicTableBytes)
        nghttp2_option_set_max_reserved_remote_streams(option, maxReservedRemoteStreams)
        // These two came with the rapid-reset and CONTINUATION fixes (upstream 1.57 and 1.61,
        // Debian 1.52.0-1+deb12u1 and u2): the binary does not load on a library without them.
        nghttp2_option_set_stream_reset_rate_limit(option, streamResetBurst, streamResetsPerSecond)
        nghttp2_option_set_max_continuations(option, maxContinuations)
    }
}
