import Logging

/// What one client call did, built up while it runs and written once when it ends: the
/// access-log line, the metrics and the debug line. HTTP/1.1 and HTTP/2 calls both end here,
/// so every call is counted the same way, whichever path it took (forwarded, refused, or ended
/// before its answer did), by what its client saw (`outcome`, docs/CONTRACT.md §5).
struct CallRecord {
    /// How the client called: the metrics' `protocol` label, whose text is made once per series
    /// (the metrics find a call's series by this value, which compares in one instruction).
    enum ClientProtocol: String {
        case http1
        /// REST over HTTP/2.
        case h2
        case grpc
    }

    var clientProtocol: ClientProtocol
    let started: Double
    var method = "-"
    /// The request target or `:path`; only its path, cut to 128 bytes, is ever logged
    /// (queries may carry ids in bulk).
    var target = ""
    var entityType: String?
    /// What the client saw of the answer: the access log's `status`, the metrics' `code`.
    var outcome = CallOutcome()
    /// The sidecar answered the call itself (docs/CONTRACT.md §5) instead of relaying Fleet Engine's answer.
    var refusal: String?
    /// `hit` or `miss` once the token was looked up.
    var cacheOutcome: String?

    init(clientProtocol: ClientProtocol, started: Double) {
        self.clientProtocol = clientProtocol
        self.started = started
    }

    /// The path without its query, for logs.
    var route: Substring {
        target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first?.prefix(128) ?? ""
    }

    /// Whether `finish` writes a line (access log, or the debug call line): most sidecars log
    /// no calls, and then a caller need not make the target a String.
    static func writesLine(core: ProxyCore, logger: Logger) -> Bool {
        core.accessLogger != nil || logger.logLevel <= .debug
    }

    /// Writes the access-log line, the metrics and (at debug) the call line. Call once.
    func finish(core: ProxyCore, logger: Logger, extra: Logger.Metadata = [:]) {
        let seconds = core.clock.monotonicNow - started
        let code = outcome.code(grpc: clientProtocol == .grpc)
        core.metrics.callFinished(protocol: clientProtocol, code: code, seconds: seconds)
        // Formatted only when a line is written.
        guard Self.writesLine(core: core, logger: logger) else { return }
        let ms = "\(Int(seconds * 1000))"
        let status = code.label
        core.accessLogger?.info("call", metadata: [
            "method": "\(method)", "route": "\(route)", "entity_type": "\(entityType ?? "-")",
            "status": "\(status)", "ms": "\(ms)", "cache": "\(cacheOutcome ?? "-")",
        ])
        guard logger.logLevel <= .debug else { return }
        var metadata: Logger.Metadata = [
            "method": "\(method)", "route": "\(route)", "entity_type": "\(entityType ?? "-")",
            "status": "\(status)", "ms": "\(ms)", "cache": "\(cacheOutcome ?? "-")",
        ]
        if let refusal { metadata["refused"] = "\(refusal)" }
        metadata.merge(extra) { $1 }
        logger.debug("call", metadata: metadata)
    }
}
