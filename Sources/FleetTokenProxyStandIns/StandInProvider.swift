import FleetTokenProxy
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A loopback token provider, the operator's backend in miniature (docs/CONTRACT.md §4): it serves
/// `GET /token/{provider}/{type}/{id}` with `{"token": <JWT>, <expiry field>: …}`, the JWT minted
/// for exactly that entity. `behaviour` and `expiryStyle` make it answer the many ways real
/// providers do, including badly, so the sidecar's handling of each can be tested.
///
/// Loop-bound: call `handler`, change settings and read counts on one thread.
package final class StandInProvider {
    /// How the next answers go wrong, if at all.
    package enum Behaviour: Sendable, Equatable {
        /// A valid token for the entity asked about.
        case normal
        /// The normal answer, `seconds` later (through the scheduler: the loop keeps running).
        case delay(Double)
        /// This HTTP status with a small JSON error body.
        case status(Int)
        /// 200 with a body that is not JSON.
        case garbage
        /// 200 with JSON that has an expiry but no token field.
        case noToken
        /// 200 with a token that has no `exp` and no expiry field: nothing says when it ends.
        case noExpiry
        /// 200 with a token, and expiry field, that ran out two minutes ago.
        case expired
        /// 200 with a valid token for another entity of the same type (or a vehicle, for the fleet).
        case wrongEntity
        /// 200 with a token whose `aud` is not Fleet Engine's.
        case wrongAudience
    }

    /// How the answer says when the token expires; each style uses a field name a real
    /// provider or Google sample uses.
    package enum ExpiryStyle: Sendable, CaseIterable {
        /// `"expirationTimestamp": <epoch seconds>`
        case epochSeconds
        /// `"expiration": <epoch milliseconds>` (as a Java sample sends)
        case epochMilliseconds
        /// `"expiresInSeconds": <seconds from now>`
        case relativeSeconds
        /// `"expires_at": "2025-01-31T12:00:00Z"`
        case rfc3339

        package var fieldName: String {
            switch self {
            case .epochSeconds: return "expirationTimestamp"
            case .epochMilliseconds: return "expiration"
            case .relativeSeconds: return "expiresInSeconds"
            case .rfc3339: return "expires_at"
            }
        }
    }

    /// Seconds from `iat` to `exp` of the tokens minted.
    package var tokenLifetime: Double = 3600
    /// A backend credential the caller must send; missing or wrong gets 401.
    package var requiredHeader: (name: String, value: String)?
    /// Judges the `Authorization: Bearer` token when set (a provider behind Google IAM, which
    /// takes an ID token for its audience); missing or refused gets 401.
    package var bearerCheck: ((String) -> Bool)?
    package var behaviour: Behaviour = .normal
    package var expiryStyle: ExpiryStyle = .epochSeconds
    /// The field the token is put in (`token` by default; `--token-field` tests change it).
    package var tokenField = "token"
    /// Overrides `expiryStyle.fieldName` (`--expiry-field` tests).
    package var expiryFieldOverride: String?

    /// Well-formed, authorized token requests per entity, whatever `behaviour` made of them.
    package private(set) var fetchesByEntity: [EntityKey: Int] = [:]
    /// Whether to keep the wall-clock time of every token request in `fetchTimes` (off, so a
    /// long benchmark does not grow it).
    package var recordsFetchTimes = false
    /// When each entity's token requests arrived, in order, while `recordsFetchTimes` is on.
    package private(set) var fetchTimes: [EntityKey: [Double]] = [:]
    package var totalFetches: Int { fetchesByEntity.values.reduce(0, +) }

    private var minter: JWTMinter
    private let scheduler: Scheduler
    private let wallClock: () -> Double

    /// - Parameters:
    ///   - keyPair: the service account key tokens are signed with.
    ///   - scheduler: runs `.delay` answers later on the owning loop.
    ///   - wallClock: seconds since the Unix epoch, for `iat`, `exp` and expiry fields.
    package init(keyPair: RSAKeyPair, scheduler: Scheduler, wallClock: @escaping () -> Double) {
        self.minter = JWTMinter(keyPair: keyPair)
        self.scheduler = scheduler
        self.wallClock = wallClock
    }

    /// Signs once, then puts that signature on every later token instead of signing it
    /// (`JWTMinter.reusedSignature`): tokens of the real length at a fraction of the CPU, which
    /// no one can verify. For benchmarks whose upstream checks nothing.
    package func reuseOneSignature() throws {
        minter.reusedSignature = try minter.keyPair.sign(Array("stand-in provider".utf8))
    }

    /// Answers token requests. Holds the provider strongly: it lives as long as the server that
    /// hosts it.
    package var handler: HTTPHandler {
        { request, respond in self.handle(request, respond) }
    }

    private func handle(_ request: HTTPRequest, _ respond: @escaping (HTTPResponse) -> Void) {
        if let required = requiredHeader, request.headers[required.name] != required.value {
            return respond(Self.error(401, "missing or wrong \(required.name) header"))
        }
        if let bearerCheck {
            let bearer = request.headers["Authorization"].flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }
            guard let bearer, bearerCheck(bearer) else { return respond(Self.error(401, "missing or refused ID token")) }
        }
        guard let entity = Self.entity(inPath: request.path) else {
            return respond(Self.error(404, "not a token path: want /token/{provider}/{type}/{id}"))
        }
        guard request.method == "GET" else {
            var response = Self.error(405, "only GET")
            response.headers.add("Allow", "GET")
            return respond(response)
        }
        fetchesByEntity[entity, default: 0] += 1
        if recordsFetchTimes { fetchTimes[entity, default: []].append(wallClock()) }

        switch behaviour {
        case .normal:
            respond(tokenAnswer(for: entity, behaviour: .normal))
        case .delay(let seconds):
            scheduler.schedule(after: seconds) { [self] in respond(tokenAnswer(for: entity, behaviour: .normal)) }
        case .status(let status):
            respond(Self.error(status, "the stand-in provider was told to answer \(status)"))
        case .garbage:
            respond(HTTPResponse(status: 200, headers: ["Content-Type": "text/html"], body: Array("<html>token service</html>".utf8)))
        case .noToken, .noExpiry, .expired, .wrongEntity, .wrongAudience:
            respond(tokenAnswer(for: entity, behaviour: behaviour))
        }
    }

    /// The 200 answer with a token, made wrong as `behaviour` says.
    private func tokenAnswer(for entity: EntityKey, behaviour: Behaviour) -> HTTPResponse {
        let now = wallClock()
        var claims = JWTMinter.Claims(for: entity, issuedAt: now, lifetime: tokenLifetime)
        switch behaviour {
        case .noExpiry:
            claims.expiresAt = nil
        case .expired:
            claims.issuedAt = Int(now.rounded(.down)) - 120 - Int(tokenLifetime.rounded())
            claims.expiresAt = Int(now.rounded(.down)) - 120
        case .wrongEntity:
            let other = entity.type == .fleet
                ? EntityKey(provider: entity.provider, type: .vehicle, id: "someone-else")
                : EntityKey(provider: entity.provider, type: entity.type, id: "not-" + entity.id)
            claims.authorization = .init(for: other)
        case .wrongAudience:
            claims.audience = "https://oauth2.googleapis.com/token"
        case .normal, .delay, .status, .garbage, .noToken:
            break
        }
        let token: String
        do {
            token = try minter.mint(claims)
        } catch {
            return Self.error(500, "could not sign: \(error)")
        }

        var object: [String: JSONish] = [:]
        if behaviour != .noToken { object[tokenField] = .string(token) }
        if let expiresAt = claims.expiresAt {
            object[expiryFieldOverride ?? expiryStyle.fieldName] = expiryValue(expiresAt, now: now)
        }
        var response = HTTPResponse.json(200, JSONish.object(object).jsonText)
        response.headers.add("Cache-Control", "no-store")
        return response
    }

    private func expiryValue(_ expiresAt: Int, now: Double) -> JSONish {
        switch expiryStyle {
        case .epochSeconds: return .number(Double(expiresAt))
        case .epochMilliseconds: return .number(Double(expiresAt * 1000))
        // Rounded down so the answer never promises more than the JWT's `exp`.
        case .relativeSeconds: return .number((Double(expiresAt) - now).rounded(.down))
        case .rfc3339: return .string(Self.rfc3339(expiresAt))
        }
    }

    /// `/token/{provider}/{type}/{id}`, segments percent-decoded; the fleet's id must be `*`.
    static func entity(inPath path: Substring) -> EntityKey? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        guard segments.count == 5, segments[0].isEmpty, segments[1] == "token",
              let provider = percentDecoded(segments[2]), !provider.isEmpty,
              let typeName = percentDecoded(segments[3]), let type = EntityType(rawValue: typeName),
              let id = percentDecoded(segments[4]), !id.isEmpty
        else { return nil }
        if type == .fleet, id != "*" { return nil }
        return EntityKey(provider: provider, type: type, id: id)
    }

    /// nil for a broken `%` escape or bytes that are not UTF-8.
    private static func percentDecoded(_ segment: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = segment.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
            bytes.append(high << 4 | low)
        }
        let text = String(decoding: bytes, as: UTF8.self)
        return text.utf8.elementsEqual(bytes) ? text : nil
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// `2025-01-31T12:00:00Z` for epoch seconds.
    static func rfc3339(_ epochSeconds: Int) -> String {
        var time = time_t(epochSeconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }

    private static func error(_ status: Int, _ message: String) -> HTTPResponse {
        .json(status, JSONish.object(["error": .string(message)]).jsonText)
    }
}
