/// Every way the sidecar itself can refuse a call, mapped once to what the client's library
/// understands (docs/CONTRACT.md §5). Messages are for operators and never contain a token.
package enum ProxyFailure: Error, Sendable, Equatable {
    /// Not a Fleet Engine call: never forwarded.
    case notFleetEngineCall(String)
    /// The entity id is missing or not a valid Fleet Engine id.
    case invalidEntity(String)
    /// The token provider answered 4xx.
    case providerRefused(String)
    /// The token provider could not be reached, was too slow, or answered 5xx.
    case providerUnavailable(String)
    /// The provider answered, but with nothing usable (no token, bad JSON, expired, no expiry).
    case providerAnswerUnusable(String)
    /// Fleet Engine (the upstream) could not be reached.
    case upstreamUnavailable(String)
    /// The request's head or body is over the configured limit.
    case requestTooLarge(String)
    /// The request is not well-formed HTTP.
    case malformedRequest(String)
    /// A bound on what the sidecar holds (the process-wide buffer budget, a connection's or a
    /// stream's share of it) is reached: the call is refused rather than let memory grow
    /// (docs/CONTRACT.md §7). The client may try again later.
    case overloaded(String)

    /// HTTP status for REST clients.
    package var httpStatus: Int {
        switch self {
        case .notFleetEngineCall: return 404
        case .invalidEntity: return 400
        case .providerRefused: return 403
        case .providerUnavailable: return 503
        case .providerAnswerUnusable: return 502
        case .upstreamUnavailable: return 502
        case .requestTooLarge: return 413
        case .malformedRequest: return 400
        case .overloaded: return 503
        }
    }

    /// gRPC status code for gRPC clients.
    var grpcStatus: Int {
        switch self {
        case .notFleetEngineCall: return 12
        case .invalidEntity: return 3
        case .providerRefused: return 7
        case .providerUnavailable, .providerAnswerUnusable, .upstreamUnavailable: return 14
        case .requestTooLarge: return 8
        case .malformedRequest: return 3
        case .overloaded: return 8
        }
    }

    /// The canonical status name used in the REST error body's `status` field.
    package var statusName: String {
        switch self {
        case .notFleetEngineCall: return "NOT_FOUND"
        case .invalidEntity: return "INVALID_ARGUMENT"
        case .providerRefused: return "PERMISSION_DENIED"
        case .providerUnavailable, .providerAnswerUnusable, .upstreamUnavailable: return "UNAVAILABLE"
        case .requestTooLarge: return "RESOURCE_EXHAUSTED"
        case .malformedRequest: return "INVALID_ARGUMENT"
        case .overloaded: return "UNAVAILABLE"
        }
    }

    package var message: String {
        switch self {
        case .notFleetEngineCall(let m), .invalidEntity(let m), .providerRefused(let m),
             .providerUnavailable(let m), .providerAnswerUnusable(let m), .upstreamUnavailable(let m),
             .requestTooLarge(let m), .malformedRequest(let m), .overloaded(let m):
            return m
        }
    }
}
