/// Works out which entity a REST call is about (docs/CONTRACT.md §3, REST table).
///
/// Only `/v1/providers/{p}/...` paths listed in the table, with the methods listed there, are
/// Fleet Engine calls; everything else is `.notFleetEngineCall` (404, never forwarded). An id
/// that is missing or breaks the docs/CONTRACT.md §2 rules is `.invalidEntity` (400). Route shape and method
/// are checked before ids, so an unknown call is a 404 whatever its ids look like.
///
/// The caller forwards the request target exactly as received; this type only reads it.
/// It runs on every call, so it scans the target's UTF-8 bytes once, by integer index, and
/// allocates only the strings of the key it returns (and messages, on failure).
package enum RESTRoute {
    /// Which entity a REST call is about. `target` is the raw request target (path + optional query).
    package static func classify(method: String, target: String) -> Result<EntityKey, ProxyFailure> {
        var contiguous = target
        return contiguous.withUTF8 { classify(method: method, target: $0) }
    }

    /// A part of the request target.
    typealias Bytes = Slice<UnsafeBufferPointer<UInt8>>

    /// The same for the target's UTF-8 bytes, as an HTTP/1.1 head holds them.
    static func classify(method: String, target: UnsafeBufferPointer<UInt8>) -> Result<EntityKey, ProxyFailure> {
        let all = target[...]
        let pathEnd = all.firstIndex(of: UInt8(ascii: "?")) ?? all.endIndex
        let path = all[..<pathEnd]
        let query = pathEnd < all.endIndex ? all[(pathEnd + 1)...] : nil

        // /v1/providers/{p}/{resource}[/{id}]; the last segment may carry a ":verb".
        guard path.first == UInt8(ascii: "/") else {
            return .failure(.notFleetEngineCall("request target \(quoted(all)) is not a path"))
        }
        var segments = PathSegments(path.dropFirst())
        guard let version = segments.next(), let providers = segments.next(),
              segment(version, is: "v1"), segment(providers, is: "providers")
        else {
            return .failure(.notFleetEngineCall("\(quoted(path)) is not a Fleet Engine path (expected /v1/providers/{provider}/...)"))
        }
        guard let providerSegment = segments.next(), let resourceSegment = segments.next() else {
            return .failure(.notFleetEngineCall("\(quoted(path)) names no Fleet Engine collection"))
        }
        let idSegment = segments.next()
        guard segments.next() == nil else {
            return .failure(.notFleetEngineCall("\(quoted(path)) has more path segments than any Fleet Engine call"))
        }
        if let problem = segmentProblem(providerSegment) ?? segmentProblem(resourceSegment)
            ?? idSegment.flatMap(segmentProblem) {
            return .failure(.notFleetEngineCall("\(quoted(path)) has \(problem)"))
        }

        // The custom verb belongs to the last segment. Split it off before decoding, at the last
        // ':' as HTTP/gRPC transcoding does, so an encoded ':' (%3A) stays inside the id and is
        // refused there rather than read as a verb.
        let resourceRaw: Bytes
        let idRaw: Bytes?
        let verbRaw: Bytes?
        if let idSegment {
            resourceRaw = resourceSegment
            (idRaw, verbRaw) = splitVerb(idSegment)
        } else {
            (resourceRaw, verbRaw) = splitVerb(resourceSegment)
            idRaw = nil
        }
        guard let resource = resource(resourceRaw) else {
            return .failure(.notFleetEngineCall("unknown Fleet Engine collection \(quoted(resourceRaw))"))
        }
        var verb: Verb?
        if let verbRaw {
            guard let known = Verb(verbRaw) else {
                return .failure(.notFleetEngineCall(
                    "unknown custom method \(quoted(verbRaw)) for \(describe(resource, hasID: idRaw != nil, verb: nil))"))
            }
            verb = known
        }

        let hasID = idRaw != nil
        let methodBit = Methods(method)
        var allowed = Methods()
        for rule in rules where rule.resource == resource && rule.hasID == hasID && rule.verb == verb {
            if !methodBit.isEmpty && rule.methods.contains(methodBit) {
                return entity(for: rule, providerRaw: providerSegment, idRaw: idRaw, query: query)
            }
            allowed.formUnion(rule.methods)
        }

        let shape = describe(resource, hasID: hasID, verb: verb)
        if !allowed.isEmpty {
            return .failure(.notFleetEngineCall("method \(quoted(method)) is not allowed for \(shape) (allowed: \(allowed))"))
        }
        return .failure(.notFleetEngineCall("\(shape) is not a Fleet Engine call"))
    }

    // MARK: - The table

    /// The collections under `/v1/providers/{p}/`.
    typealias Resource = ResourceCollection
    private static let allResources = ResourceCollection.allCases

    /// The collection a (still encoded) path segment names, compared after decoding.
    private static func resource(_ raw: Bytes) -> Resource? {
        matchDecoded(raw, among: allResources, by: \.name)
    }

    /// The custom methods (`:verb`) the table lists.
    enum Verb: CaseIterable, Sendable {
        case updateAttributes, updateLocation, search, batchCreate, report

        var name: StaticString {
            switch self {
            case .updateAttributes: return "updateAttributes"
            case .updateLocation: return "updateLocation"
            case .search: return "search"
            case .batchCreate: return "batchCreate"
            case .report: return "report"
            }
        }

        private static let all = allCases

        init?(_ raw: Bytes) {
            guard let match = matchDecoded(raw, among: Self.all, by: \.name) else { return nil }
            self = match
        }
    }

    /// HTTP methods of the table; names are case-sensitive (RFC 9110 §9.1).
    struct Methods: OptionSet, Sendable, CustomStringConvertible {
        let rawValue: UInt8
        static let get = Methods(rawValue: 1 << 0)
        static let put = Methods(rawValue: 1 << 1)
        static let post = Methods(rawValue: 1 << 2)
        static let patch = Methods(rawValue: 1 << 3)
        static let delete = Methods(rawValue: 1 << 4)

        init(rawValue: UInt8) { self.rawValue = rawValue }

        /// The bit for `method`, or the empty set for a method the table never lists.
        init(_ method: String) {
            switch method {
            case "GET": self = .get
            case "PUT": self = .put
            case "POST": self = .post
            case "PATCH": self = .patch
            case "DELETE": self = .delete
            default: self = []
            }
        }

        var description: String {
            let names: [(Methods, String)] = [(.get, "GET"), (.put, "PUT"), (.post, "POST"), (.patch, "PATCH"), (.delete, "DELETE")]
            return names.filter { contains($0.0) }.map(\.1).joined(separator: ", ")
        }
    }

    /// Where the entity of a matched route comes from.
    enum Outcome: Sendable {
        /// The `{id}` path segment names an entity of this type.
        case pathID(EntityType)
        /// A create call: the new entity's id is in this query parameter, which Google's REST
        /// transcoding also accepts in snake_case (`alias`): both name the same field.
        case queryID(EntityType, parameter: StaticString, alias: StaticString)
        /// No single entity: the fleet token. A path `{id}`, if any, is still validated.
        case fleet
    }

    /// One row of the docs/CONTRACT.md §3 REST table, for one set of methods.
    struct Rule: Sendable {
        var resource: Resource
        var hasID: Bool
        /// The custom method after ':' in the last segment, if the route has one.
        var verb: Verb?
        var methods: Methods
        var outcome: Outcome

        init(_ resource: Resource, id hasID: Bool, verb: Verb? = nil, _ methods: Methods, _ outcome: Outcome) {
            self.resource = resource
            self.hasID = hasID
            self.verb = verb
            self.methods = methods
            self.outcome = outcome
        }
    }

    static let rules: [Rule] = [
        Rule(.vehicles, id: true, [.get, .put, .delete], .pathID(.vehicle)),
        Rule(.vehicles, id: true, verb: .updateAttributes, [.post, .put], .pathID(.vehicle)),
        Rule(.vehicles, id: true, verb: .updateLocation, [.post, .put], .pathID(.vehicle)),
        Rule(.vehicles, id: false, .post, .queryID(.vehicle, parameter: "vehicleId", alias: "vehicle_id")),
        Rule(.vehicles, id: false, .get, .fleet),
        Rule(.vehicles, id: false, verb: .search, .post, .fleet),

        Rule(.trips, id: true, [.get, .put, .delete], .pathID(.trip)),
        Rule(.trips, id: false, .post, .queryID(.trip, parameter: "tripId", alias: "trip_id")),
        Rule(.trips, id: false, .get, .fleet),
        Rule(.trips, id: false, verb: .search, .post, .fleet),

        Rule(.deliveryVehicles, id: true, [.get, .patch, .delete], .pathID(.deliveryVehicle)),
        Rule(.deliveryVehicles, id: false, .post, .queryID(.deliveryVehicle, parameter: "deliveryVehicleId", alias: "delivery_vehicle_id")),
        Rule(.deliveryVehicles, id: false, .get, .fleet),

        Rule(.tasks, id: true, [.get, .patch, .delete], .pathID(.task)),
        Rule(.tasks, id: false, .post, .queryID(.task, parameter: "taskId", alias: "task_id")),
        Rule(.tasks, id: false, .get, .fleet),
        Rule(.tasks, id: false, verb: .batchCreate, .post, .fleet),

        Rule(.taskTrackingInfo, id: true, .get, .pathID(.tracking)),

        Rule(.billableTrips, id: true, verb: .report, .post, .fleet),
    ]

    // MARK: - Entities

    private static func entity(
        for rule: Rule, providerRaw: Bytes, idRaw: Bytes?, query: Bytes?
    ) -> Result<EntityKey, ProxyFailure> {
        // Credentials come only from the sidecar (docs/CONTRACT.md §7): a client's own would reach Fleet
        // Engine next to, or instead of, the entity's token.
        if let name = credentialParameter(in: query) {
            return .failure(.invalidEntity("the \(quoted(name)) query parameter is a credential; only the sidecar supplies credentials"))
        }
        let provider: String
        switch validID(providerRaw, noun: "provider id", plusAsSpace: false) {
        case .success(let p): provider = p
        case .failure(let f): return .failure(f)
        }

        // Every path id is validated, even for fleet calls, so a malformed id never travels on.
        var pathID: String?
        if let idRaw {
            switch validID(idRaw, noun: rule.resource.idNoun, plusAsSpace: false) {
            case .success(let id): pathID = id
            case .failure(let f): return .failure(f)
            }
        }

        switch rule.outcome {
        case .pathID(let type):
            guard let pathID else { return .failure(.notFleetEngineCall("route has no id")) }
            return .success(EntityKey(provider: provider, type: type, id: pathID))

        case .fleet:
            return .success(.fleet(provider: provider))

        case .queryID(let type, let parameter, let alias):
            let noun = rule.resource.idNoun
            switch queryValue(named: parameter, alias: alias, in: query) {
            case .missing:
                return .failure(.invalidEntity(
                    "\(noun) is missing: POST \(rule.resource.name) needs the \(parameter) query parameter"))
            case .repeated:
                return .failure(.invalidEntity("\(noun) is ambiguous: the \(parameter) query parameter (or \(alias)) appears more than once"))
            case .found(let raw):
                return validID(raw, noun: noun, plusAsSpace: true).map {
                    EntityKey(provider: provider, type: type, id: $0)
                }
            }
        }
    }

    /// Decodes a path segment or query value and checks it against docs/CONTRACT.md §2. Messages quote the
    /// raw text: it shows an operator exactly what the client sent.
    private static func validID(_ raw: Bytes, noun: String, plusAsSpace: Bool) -> Result<String, ProxyFailure> {
        let bytes = UnsafeBufferPointer(rebasing: raw)
        let id: String
        let problem: EntityID.Problem?
        if raw.contains(where: { $0 == UInt8(ascii: "%") || (plusAsSpace && $0 == UInt8(ascii: "+")) }) {
            guard let decoded = PercentDecoding.decode(utf8: bytes, plusAsSpace: plusAsSpace) else {
                return .failure(.invalidEntity("\(noun) \(quoted(raw)) is not valid percent-encoded UTF-8"))
            }
            id = decoded
            problem = EntityID.problem(with: id)
        } else {
            // Validate before copying: a 10 kB id is refused after 65 characters.
            problem = EntityID.problem(utf8: bytes)
            id = problem == nil ? String(decoding: bytes, as: UTF8.self) : ""
        }
        if let problem {
            return .failure(.invalidEntity("\(noun) \(quoted(raw)) \(problem)"))
        }
        return .success(id)
    }

    enum QueryLookup {
        case missing
        /// Given twice: which one Fleet Engine would use is not ours to guess.
        case repeated
        case found(Bytes)
    }

    /// The raw (still encoded) value of the query parameter `name` or its `alias` (the same
    /// field to the server). Parameter names are compared after decoding, as the server will
    /// decode them; either name given twice, or both given, is `.repeated`.
    static func queryValue(named name: StaticString, alias: StaticString, in query: Bytes?) -> QueryLookup {
        var result = QueryLookup.missing
        forEachParameter(in: query) { key, value in
            guard matchDecoded(key, among: [name, alias], by: { $0 }, plusAsSpace: true) != nil else { return true }
            if case .found = result {
                result = .repeated
                return false
            }
            result = .found(value)
            return true
        }
        return result
    }

    /// The first query parameter that carries a client credential (`access_token`, `key`,
    /// compared after decoding and in any case), as sent; nil when there is none.
    static func credentialParameter(in query: Bytes?) -> Bytes? {
        var found: Bytes?
        forEachParameter(in: query) { key, _ in
            var decoded = ""
            if key.contains(where: { $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "+") }) {
                decoded = PercentDecoding.decode(utf8: UnsafeBufferPointer(rebasing: key), plusAsSpace: true) ?? ""
            } else if key.count <= 12 {
                decoded = String(decoding: UnsafeBufferPointer(rebasing: key), as: UTF8.self)
            }
            if decoded.asciiCaseInsensitiveEquals("access_token") || decoded.asciiCaseInsensitiveEquals("key") {
                found = key
                return false
            }
            return true
        }
        return found
    }

    /// Calls `body` with each `key=value` pair's raw key and raw value (empty when there is no
    /// `=`) until it returns false.
    private static func forEachParameter(in query: Bytes?, _ body: (_ key: Bytes, _ value: Bytes) -> Bool) {
        guard var rest = query else { return }
        while true {
            let amp = rest.firstIndex(of: UInt8(ascii: "&")) ?? rest.endIndex
            let pair = rest[..<amp]
            let eq = pair.firstIndex(of: UInt8(ascii: "=")) ?? pair.endIndex
            guard body(pair[..<eq], eq < pair.endIndex ? pair[(eq + 1)...] : pair[eq...]) else { return }
            guard amp < rest.endIndex else { return }
            rest = rest[(amp + 1)...]
        }
    }

    /// Request header fields that would make Fleet Engine's front end run another method than
    /// the one the route (and so the entity and token) was chosen from.
    static let methodOverrideNames: [StaticString] = ["x-http-method-override", "x-http-method", "x-method-override"]

    /// Client credentials a call must not carry (`Authorization` is replaced, not refused).
    static let clientCredentialNames: [StaticString] = ["x-goog-api-key"]

    static func isMethodOverride(_ name: ByteView) -> Bool {
        methodOverrideNames.contains { name.equalsLowercased($0) }
    }

    /// The refusal (400) for a call whose header fields must never reach Fleet Engine: a method
    /// override, or a client credential (`X-Goog-Api-Key`; `Authorization` is replaced, not
    /// refused), for the first such field. Nil when the fields are acceptable. One check for
    /// an HTTP/1.1 head and an HTTP/2 header list alike, over the names as they arrived: no
    /// `String` is made unless the call is refused.
    static func headerRefusal<Fields: HeaderFieldBytes>(fields: Fields) -> ProxyFailure? {
        fields.firstNonNil { name, _ in headerRefusal(name: name) }
    }

    /// The same check for one field name.
    static func headerRefusal(name: ByteView) -> ProxyFailure? {
        if isMethodOverride(name) {
            return .invalidEntity("the \(name.string) header is not accepted: the call runs the method it was sent with")
        }
        if clientCredentialNames.contains(where: { name.equalsLowercased($0) }) {
            return .invalidEntity("the \(name.string) header is a credential; only the sidecar supplies credentials")
        }
        return nil
    }

    // MARK: - Path helpers

    /// Splits a path (without its leading '/') at every '/', keeping empty segments.
    struct PathSegments {
        private var rest: Bytes?

        init(_ path: Bytes) { rest = path }

        mutating func next() -> Bytes? {
            guard let current = rest else { return nil }
            if let slash = current.firstIndex(of: UInt8(ascii: "/")) {
                rest = current[(slash + 1)...]
                return current[..<slash]
            }
            rest = nil
            return current
        }
    }

    /// The element of `candidates` whose name equals `raw`, literally or once decoded.
    private static func matchDecoded<C: Collection>(
        _ raw: Bytes, among candidates: C, by name: (C.Element) -> StaticString, plusAsSpace: Bool = false
    ) -> C.Element? {
        for candidate in candidates where ByteView(raw) == name(candidate) { return candidate }
        guard raw.contains(where: { $0 == UInt8(ascii: "%") || (plusAsSpace && $0 == UInt8(ascii: "+")) }),
              var decoded = PercentDecoding.decode(utf8: UnsafeBufferPointer(rebasing: raw), plusAsSpace: plusAsSpace)
        else { return nil }
        return decoded.withUTF8 { decodedBytes in
            candidates.first { ByteView(decodedBytes) == name($0) }
        }
    }

    /// True when the segment is `literal`, literally or once decoded. Decoding is tried only
    /// when there is a `%`: the usual segment is compared once, with no generic matching.
    private static func segment(_ raw: Bytes, is literal: StaticString) -> Bool {
        if ByteView(raw) == literal { return true }
        guard raw.contains(UInt8(ascii: "%")) else { return false }
        return matchDecoded(raw, among: CollectionOfOne(literal), by: { $0 }) != nil
    }

    /// Segments no Fleet Engine path has: empty ones (`//`, a trailing `/`), and `.` or `..`,
    /// also encoded (`%2e`), which servers and intermediaries may normalize away, after which
    /// the call would be about something else.
    private static func segmentProblem(_ raw: Bytes) -> String? {
        if raw.isEmpty { return "an empty path segment" }
        // Only a segment holding a `.` or an escape can be one (`%2e`, `.%2E`, ...).
        guard raw.count <= 6, raw.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "%") }),
              segment(raw, is: ".") || segment(raw, is: "..") else { return nil }
        return "a '.' or '..' path segment"
    }

    private static func splitVerb(_ last: Bytes) -> (Bytes, Bytes?) {
        guard let colon = last.lastIndex(of: UInt8(ascii: ":")) else { return (last, nil) }
        return (last[..<colon], last[(colon + 1)...])
    }

    private static func describe(_ resource: Resource, hasID: Bool, verb: Verb?) -> String {
        var text = "\(resource.name)"
        if hasID { text += "/{id}" }
        if let verb { text += ":\(verb.name)" }
        return text
    }

    // MARK: - Messages

    /// The longest piece of client input a message repeats, in Unicode scalars.
    static let echoLimit = EchoedInput.limit

    /// Client input for a message: quoted, cut to `echoLimit` scalars (the last one an
    /// ellipsis when cut) and with control characters replaced, so neither a huge nor a hostile
    /// target makes it into logs or error bodies.
    static func quoted<S: StringProtocol>(_ text: S) -> String {
        "'" + capped(text) + "'"
    }

    private static func quoted(_ bytes: Bytes) -> String {
        // Only the first bytes can be shown: no need to copy a huge target to cut it.
        let shown = bytes.prefix(echoLimit * 4 + 4)
        // A cut prefix still holds more than `echoLimit` scalars, so `capped` marks the cut.
        return quoted(String(decoding: UnsafeBufferPointer(rebasing: shown), as: UTF8.self))
    }

    static func capped<S: StringProtocol>(_ text: S) -> String { EchoedInput.capped(text) }
}
