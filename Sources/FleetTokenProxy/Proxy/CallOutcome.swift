/// What a call's client saw of its answer: the access log's `status` and the metrics' `code`
/// label (docs/CONTRACT.md §5, "What a call is recorded as"). The client half feeds it as the
/// answer goes out, whoever wrote it (Fleet Engine, relayed, or the sidecar itself), and the
/// call's record reads it once, when the call ends. No clock, no sockets (`CallOutcomeTests`).
///
/// | event | when | kept |
/// |---|---|---|
/// | `headSent(status:)` | the answer's head went to the client | its HTTP status |
/// | `grpcStatusSent(_:)` | the block that ends a gRPC answer (a trailers-only head, trailers) holds `grpc-status` | the gRPC status |
/// | `answerEnded()` | the answer's end (END_STREAM, its last byte) went to the client | the answer was whole |
/// | `answerCut()` | the sidecar ended an answer it had begun because Fleet Engine's broke | the answer was cut |
///
/// The first of `answerEnded` and `answerCut` decides, and nothing after it counts; a call that
/// ends with neither lost its client first (a reset stream, a closed connection, a client that
/// stopped reading): `cancelled`.
struct CallOutcome: Equatable {
    /// The value recorded. Bounded, as a label must be: an HTTP status is three digits, a gRPC
    /// status 0–16 (`GRPCStatus`), and two words. One integer inside, so that the metrics find a
    /// call's series by hashing and comparing no more than the HTTP status alone cost them.
    struct Code: Hashable {
        /// A status (never negative), or one of the words below zero.
        private let value: Int

        /// REST: the HTTP status written; gRPC: the gRPC status the client received.
        static func status(_ status: Int) -> Code { Code(value: max(0, status)) }
        /// The client went away before its answer ended.
        static var cancelled: Code { Code(value: -1) }
        /// A REST answer the sidecar cut after its head: its client has a status and part of a
        /// body, not an answer.
        static var cut: Code { Code(value: -2) }

        /// As the metrics' `code` label and the access log's `status` show it.
        var label: String {
            switch value {
            case Self.cancelled.value: return "cancelled"
            case Self.cut.value: return "cut"
            default: return String(value)
            }
        }
    }

    private enum Ending: Equatable { case whole, cut }

    private var httpStatus: Int?
    private var grpcStatus: Int?
    private var ending: Ending?

    mutating func headSent(status: Int) {
        if ending == nil { httpStatus = status }
    }

    /// `status` as `GRPCStatus` reads it (0–16).
    mutating func grpcStatusSent(_ status: Int) {
        if ending == nil { grpcStatus = status }
    }

    mutating func answerEnded() {
        if ending == nil { ending = .whole }
    }

    mutating func answerCut() {
        if ending == nil { ending = .cut }
    }

    /// What the client saw; `grpc`: the call is a gRPC call. A gRPC client reads its status
    /// from `grpc-status`, from the HTTP status when there is none (gRPC's mapping: a proxy's
    /// error page), and a stream the sidecar reset mid-answer (INTERNAL_ERROR) as INTERNAL.
    func code(grpc: Bool) -> Code {
        switch ending {
        case nil:
            return .cancelled
        case .cut?:
            return grpc ? .status(GRPCStatus.internal) : .cut
        case .whole?:
            guard grpc else { return .status(httpStatus ?? 0) }
            return .status(grpcStatus ?? GRPCStatus.fromHTTP(httpStatus ?? 200))
        }
    }
}
