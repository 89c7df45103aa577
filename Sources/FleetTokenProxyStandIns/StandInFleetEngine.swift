import FleetTokenProxy

/// What the stand-in Fleet Engine has seen since it was created.
package struct StandInFleetEngineStatistics: Sendable, Equatable {
    /// Calls answered 200.
    package var accepted = 0
    /// Calls refused: unroutable, or the token failed a check.
    package var rejected = 0
    /// Refusals by `FleetEngineTokenCheck.Reason` raw value, or `"unroutable"`.
    package var rejectionsByReason: [String: Int] = [:]
    /// Every routable call, accepted or not, by the type of its entity.
    package var callsByEntityType: [EntityType: Int] = [:]
    /// Accepted calls by entity.
    package var acceptedByEntity: [EntityKey: Int] = [:]

    package init() {}
}

/// A loopback Fleet Engine for the demo, the integration tests and the benchmark: it works out
/// each call's entity with the same classifier the sidecar uses, checks the token the way Fleet
/// Engine does (`FleetEngineTokenCheck`), and answers with a small JSON echo or Google's error
/// JSON. It never echoes a token, in a body or a message.
///
/// Loop-bound: call `handler` and read `statistics` on one thread.
package final class StandInFleetEngine {
    /// The response header that carries the request body's length, so tests can see bodies
    /// were relayed whole.
    package static let requestBytesHeader = "x-standin-request-bytes"
    /// Exactly what a `/v1/providers/{p}/vehicles/big-…` call answers with.
    package static let bigResponseSize = 1 << 20

    package private(set) var statistics = StandInFleetEngineStatistics()
    /// The token check; tests may widen or narrow `allowedClockSkew`.
    package var tokenCheck: FleetEngineTokenCheck
    /// Sees every request as it arrived (the token included): for tests that check what was
    /// relayed. Never log what it is given.
    package var requestObserver: ((HTTPRequest) -> Void)?
    /// Answers this many of the next routable calls 401 `UNAUTHENTICATED`, whatever their
    /// token, as Fleet Engine answers a token revoked after it was issued; counts down.
    package var unauthenticatedCalls = 0
    /// Tokens answered 401 `UNAUTHENTICATED`, as if revoked, until removed.
    package var revokedTokens: Set<String> = []
    /// The rejection key in `statistics.rejectionsByReason` of the two knobs above.
    package static let revokedReason = "revoked"

    private let classify: (_ method: String, _ target: String) -> Result<EntityKey, ProxyFailure>
    private let wallClock: () -> Double

    /// - Parameters:
    ///   - publicKey, keyID: the token provider's signing key, the only one trusted.
    ///   - classify: the sidecar's own routing (docs/CONTRACT.md §3), so both sides agree on the entity.
    ///   - wallClock: seconds since the Unix epoch, to judge `iat` and `exp`.
    package convenience init(
        publicKey: RSAPublicKey, keyID: String,
        classify: @escaping (_ method: String, _ target: String) -> Result<EntityKey, ProxyFailure>,
        wallClock: @escaping () -> Double
    ) {
        self.init(tokenCheck: FleetEngineTokenCheck(publicKey: publicKey, keyID: keyID), classify: classify, wallClock: wallClock)
    }

    /// A stand-in that judges tokens with `tokenCheck` (service accounts' keys from a JWKS).
    package init(
        tokenCheck: FleetEngineTokenCheck,
        classify: @escaping (_ method: String, _ target: String) -> Result<EntityKey, ProxyFailure>,
        wallClock: @escaping () -> Double
    ) {
        self.tokenCheck = tokenCheck
        self.classify = classify
        self.wallClock = wallClock
    }

    /// Answers every call at once. Holds the stand-in strongly: it lives as long as the server
    /// that hosts it.
    package var handler: HTTPHandler {
        { request, respond in respond(self.respond(to: request)) }
    }

    private func respond(to request: HTTPRequest) -> HTTPResponse {
        requestObserver?(request)
        var response = answer(request)
        response.headers.add(Self.requestBytesHeader, String(request.body.count))
        return response
    }

    private func answer(_ request: HTTPRequest) -> HTTPResponse {
        let entity: EntityKey
        switch classify(request.method, request.target) {
        case .failure(let failure):
            count(rejection: "unroutable")
            return Self.errorResponse(status: failure.httpStatus, statusName: failure.statusName, message: failure.message)
        case .success(let key):
            entity = key
        }
        statistics.callsByEntityType[entity.type, default: 0] += 1

        if unauthenticatedCalls > 0 || isRevoked(request.headers) {
            unauthenticatedCalls = max(0, unauthenticatedCalls - 1)
            count(rejection: Self.revokedReason)
            return Self.errorResponse(status: 401, statusName: "UNAUTHENTICATED", message: "Token rejected: the token has been revoked")
        }

        switch tokenCheck.check(headers: request.headers, entity: entity, now: wallClock()) {
        case .rejected(let reason, let detail):
            count(rejection: reason.rawValue)
            return Self.errorResponse(status: reason.httpStatus, statusName: reason.statusName, message: "Token rejected: \(detail)")
        case .ok:
            statistics.accepted += 1
            statistics.acceptedByEntity[entity, default: 0] += 1
            return .json(200, Self.echoBody(for: entity, bigFor: request.path))
        }
    }

    private func isRevoked(_ headers: HTTPHeaders) -> Bool {
        guard !revokedTokens.isEmpty, let header = headers["Authorization"], header.hasPrefix("Bearer ") else { return false }
        return revokedTokens.contains(String(header.dropFirst("Bearer ".count)))
    }

    private func count(rejection reason: String) {
        statistics.rejected += 1
        statistics.rejectionsByReason[reason, default: 0] += 1
    }

    /// `{"name":"providers/p/vehicles/v1"}`, or that padded to exactly 1 MiB for a `big-` vehicle.
    private static func echoBody(for entity: EntityKey, bigFor path: Substring) -> String {
        let name = resourceName(entity)
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        let big = segments.count >= 6 && segments[1] == "v1" && segments[2] == "providers"
            && segments[4] == "vehicles" && segments[5].hasPrefix("big-")
        guard big else { return JSONish.object(["name": .string(name)]).jsonText }
        let empty = JSONish.object(["name": .string(name), "padding": .string("")]).jsonText
        let padding = String(repeating: "x", count: max(0, bigResponseSize - empty.utf8.count))
        return JSONish.object(["name": .string(name), "padding": .string(padding)]).jsonText
    }

    /// The resource a real Fleet Engine would name in its answer; the provider alone for the fleet.
    private static func resourceName(_ entity: EntityKey) -> String {
        let collection: String
        switch entity.type {
        case .vehicle: collection = "vehicles"
        case .trip: collection = "trips"
        case .deliveryVehicle: collection = "deliveryVehicles"
        case .task: collection = "tasks"
        case .tracking: collection = "taskTrackingInfo"
        case .fleet: return "providers/\(entity.provider)"
        }
        return "providers/\(entity.provider)/\(collection)/\(entity.id)"
    }

    /// Google's REST error shape.
    static func errorResponse(status: Int, statusName: String, message: String) -> HTTPResponse {
        let error: [String: JSONish] = ["code": .number(Double(status)), "message": .string(message), "status": .string(statusName)]
        return .json(status, JSONish.object(["error": .object(error)]).jsonText)
    }
}
