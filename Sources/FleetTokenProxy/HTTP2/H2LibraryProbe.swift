import CNghttp2

/// Asks the loaded libnghttp2 itself whether it stops the attacks the sidecar relies on it to
/// stop, instead of trusting its version string (Debian backports fixes without changing it): each
/// attack's frames are fed to an in-memory server session, set up as the sidecar's are
/// (`H2Limits`), and what the library does is observed. No socket; well under a millisecond.
///
/// Each probe stops short of what would harm an unfixed library: the CVE-2026-27135 probe only
/// watches whether a terminated session goes on processing the frame it was reading, never sends
/// the malformed frame that would then trip the unfixed library's assertion.
enum H2LibraryProbe {
    /// What the library did with each attack: `true` when it acted as the fixed library does.
    struct Outcome: Equatable, Sendable {
        /// CVE-2023-44487 (rapid reset): past the reset burst the client is sent GOAWAY.
        var stopsRapidReset: Bool
        /// CVE-2024-28182: past `H2Limits.maxContinuations` CONTINUATION frames the session fails.
        var stopsContinuationFlood: Bool
        /// CVE-2026-27135: once the session is terminated, the rest of its input is not processed
        /// (the unfixed library reads on, and a frame of the wrong size then aborts the process).
        var stopsReadingWhenTerminated: Bool

        static let fixed = Outcome(stopsRapidReset: true, stopsContinuationFlood: true, stopsReadingWhenTerminated: true)

        /// The protections that did not hold, as a warning names them.
        var missing: [String] {
            var names: [String] = []
            if !stopsRapidReset { names.append("CVE-2023-44487 (rapid reset)") }
            if !stopsContinuationFlood { names.append("CVE-2024-28182 (CONTINUATION flood)") }
            if !stopsReadingWhenTerminated { names.append("CVE-2026-27135 (reading on after a connection error)") }
            return names
        }
    }

    /// Runs the three probes against the library this process loaded.
    static func run(limits: H2Limits = H2Limits()) -> Outcome {
        Outcome(stopsRapidReset: sendsGoAway(afterResets: Int(limits.streamResetBurst) + 50, limits: limits),
                stopsContinuationFlood: failsSession(afterContinuations: limits.maxContinuations + 1, limits: limits),
                stopsReadingWhenTerminated: !processesData(afterTerminating: true, limits: limits))
    }

    /// Whether a client that opens and at once resets `resets` streams is sent GOAWAY
    /// INTERNAL_ERROR (the reset rate limit, a token bucket of `streamResetBurst`).
    static func sendsGoAway(afterResets resets: Int, limits: H2Limits) -> Bool {
        guard let session = ProbeSession(limits: limits) else { return false }
        var input = clientPreface
        for index in 0..<resets {
            let stream = UInt32(2 * index + 1)
            input += frame(type: 0x1, flags: endHeaders | endStream, stream: stream, payload: requestBlock)
            input += frame(type: 0x3, flags: 0, stream: stream, payload: [0, 0, 0, 0x8]) // RST_STREAM CANCEL
        }
        _ = session.receive(input)
        return goAwayCodes(in: session.sent()).contains(UInt32(NGHTTP2_INTERNAL_ERROR.rawValue))
    }

    /// Whether a header block continued by `continuations` CONTINUATION frames fails the session
    /// with `NGHTTP2_ERR_TOO_MANY_CONTINUATIONS`.
    static func failsSession(afterContinuations continuations: Int, limits: H2Limits) -> Bool {
        guard let session = ProbeSession(limits: limits) else { return false }
        var input = clientPreface + frame(type: 0x1, flags: endStream, stream: 1, payload: requestBlock)
        for _ in 0..<continuations {
            input += frame(type: 0x9, flags: 0, stream: 1, payload: extraField)
        }
        return session.receive(input) == Int(NGHTTP2_ERR_TOO_MANY_CONTINUATIONS.rawValue)
    }

    /// Whether a DATA frame is still processed to its end (`on_frame_recv_callback`) after the
    /// session was terminated from its chunk callback, as an application may on a connection error.
    /// The fixed library returns at once; the unfixed one goes on, and reads the frames after it.
    static func processesData(afterTerminating terminate: Bool, limits: H2Limits) -> Bool {
        guard let session = ProbeSession(limits: limits, terminateOnData: terminate) else { return true }
        _ = session.receive(clientPreface + frame(type: 0x1, flags: endHeaders, stream: 1, payload: postBlock)
            + frame(type: 0x0, flags: endStream, stream: 1, payload: Array("probe".utf8)))
        return session.dataFramesReceived > 0
    }

    // MARK: Frames (RFC 9113 §4.1, §3.4)

    private static let endStream: UInt8 = 0x1
    private static let endHeaders: UInt8 = 0x4

    /// The connection preface and an empty SETTINGS frame.
    private static let clientPreface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + frame(type: 0x4, flags: 0, stream: 0, payload: [])

    /// `GET https://a/` in HPACK: three static-table fields and `:authority` without indexing, so
    /// the probe's many blocks leave the decoder's table empty.
    private static let requestBlock: [UInt8] = [0x82, 0x87, 0x84, 0x01, 0x01, UInt8(ascii: "a")]
    /// The same as a POST, which has a body.
    private static let postBlock: [UInt8] = [0x83] + requestBlock.dropFirst()
    /// `x: y`, a field of its own (a repeated pseudo-field would make a newer library refuse the
    /// block before it counts its CONTINUATIONs).
    private static let extraField: [UInt8] = [0x00, 0x01, UInt8(ascii: "x"), 0x01, UInt8(ascii: "y")]

    private static func frame(type: UInt8, flags: UInt8, stream: UInt32, payload: [UInt8]) -> [UInt8] {
        let length = UInt32(payload.count)
        return [UInt8(truncatingIfNeeded: length >> 16), UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length),
                type, flags,
                UInt8(truncatingIfNeeded: stream >> 24), UInt8(truncatingIfNeeded: stream >> 16),
                UInt8(truncatingIfNeeded: stream >> 8), UInt8(truncatingIfNeeded: stream)] + payload
    }

    /// The error codes of the GOAWAY frames in `bytes`, a server's output frame by frame.
    static func goAwayCodes(in bytes: [UInt8]) -> [UInt32] {
        var codes: [UInt32] = []
        var at = 0
        while at + 9 <= bytes.count {
            let length = Int(bytes[at]) << 16 | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2])
            let payload = at + 9
            guard payload + length <= bytes.count else { break }
            if bytes[at + 3] == 0x7, length >= 8 {
                codes.append(bytes[(payload + 4)..<(payload + 8)].reduce(0) { $0 << 8 | UInt32($1) })
            }
            at = payload + length
        }
        return codes
    }
}

/// One in-memory nghttp2 server session for a probe: bytes in through `receive`, the frames it
/// would send out through `sent`. Owns the session and frees it in `deinit`; the callbacks' user
/// data is this object, unretained, which lives as long as the session it owns.
private final class ProbeSession {
    private var session: OpaquePointer?
    private let terminateOnData: Bool
    /// DATA frames nghttp2 processed to their end (`on_frame_recv_callback`).
    private(set) var dataFramesReceived = 0

    init?(limits: H2Limits, terminateOnData: Bool = false) {
        self.terminateOnData = terminateOnData
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else { return nil }
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { session, _, _, _, _, userData in
            let probe = Unmanaged<ProbeSession>.fromOpaque(userData!).takeUnretainedValue()
            return probe.terminateOnData ? nghttp2_session_terminate_session(session, NGHTTP2_NO_ERROR.rawValue) : 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, userData in
            if frame!.pointee.hd.type == UInt8(NGHTTP2_DATA.rawValue) {
                Unmanaged<ProbeSession>.fromOpaque(userData!).takeUnretainedValue().dataFramesReceived += 1
            }
            return 0
        }
        var option: OpaquePointer?
        guard nghttp2_option_new(&option) == 0, let option else { return nil }
        defer { nghttp2_option_del(option) }
        limits.apply(to: option)
        let context = Unmanaged.passUnretained(self).toOpaque()
        guard nghttp2_session_server_new2(&session, callbacks, context, option) == 0, session != nil else { return nil }
    }

    deinit {
        nghttp2_session_del(session)
    }

    /// `nghttp2_session_mem_recv`'s answer: the bytes taken, or a negative error.
    func receive(_ bytes: [UInt8]) -> Int {
        bytes.withUnsafeBufferPointer { Int(nghttp2_session_mem_recv(session, $0.baseAddress, $0.count)) }
    }

    /// Everything the session has queued to send.
    func sent() -> [UInt8] {
        var out: [UInt8] = []
        while true {
            var data: UnsafePointer<UInt8>?
            let count = nghttp2_session_mem_send(session, &data)
            guard count > 0, let data else { return out }
            out += UnsafeBufferPointer(start: data, count: count)
        }
    }
}
