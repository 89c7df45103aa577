/// Works out which entity a gRPC call is about (docs/CONTRACT.md §3, gRPC table): the method from the
/// HTTP/2 `:path`, then the entity from the call's first request message.
///
/// Only the methods of the table are Fleet Engine calls; any other `:path` has no rule and is
/// answered `UNIMPLEMENTED` without being forwarded. A request whose entity is missing,
/// ambiguous or breaks the docs/CONTRACT.md §2 rules is `.invalidEntity` (`INVALID_ARGUMENT`), and so is a
/// message that is not valid protobuf.
///
/// Resource names in gRPC messages are plain strings (`providers/{p}/vehicles/{id}`), not
/// percent-encoded URL paths: they are split at `/` and compared byte for byte. `classify` runs
/// on every call, so it reads the message in place and allocates only the strings of the key
/// it returns (and messages, on failure).
package enum GRPCRoute {
    /// The routing rule for a `:path` like "/maps.fleetengine.v1.VehicleService/GetVehicle";
    /// nil → UNIMPLEMENTED (not a Fleet Engine method).
    package static func rule(forPath path: String) -> GRPCRouteRule? {
        GRPCMethodTable.rule(forPath: path)
    }

    /// Which entity the call is about, from its first request message (already inflated).
    package static func classify(rule: GRPCRouteRule, message: UnsafeRawBufferPointer) -> Result<EntityKey, ProxyFailure> {
        do {
            return .success(try entity(rule: rule, message: message))
        } catch {
            return .failure(error)
        }
    }

    typealias Bytes = Slice<UnsafeBufferPointer<UInt8>>

    private static func entity(rule: GRPCRouteRule, message: UnsafeRawBufferPointer) throws(ProxyFailure) -> EntityKey {
        switch rule.source {
        case .resourceName(let field, let collection):
            let name = try string(field, in: message, rule: rule, expecting: collection)
            let (provider, id) = try resourceName(name, field: field, rule: rule, collection: collection)
            return EntityKey(provider: provider, type: rule.entityType, id: id)

        case .createdID(let parentField, let idField, let collection):
            let provider = try parent(parentField, in: message, rule: rule)
            let id = try validID(string(idField, in: message, rule: rule, expecting: nil), noun: collection.idNoun)
            return EntityKey(provider: provider, type: rule.entityType, id: id)

        case .fleetParent(let parentField):
            return .fleet(provider: try parent(parentField, in: message, rule: rule))

        case .fleetResourceName(let field, let collection):
            // The id does not pick the token, but is validated so a malformed one never travels on.
            let name = try string(field, in: message, rule: rule, expecting: collection)
            let (provider, _) = try resourceName(name, field: field, rule: rule, collection: collection)
            return .fleet(provider: provider)
        }
    }

    // MARK: - Fields

    /// The one non-empty string at `field`. `expecting` names the resource-name shape for the
    /// message when it is missing.
    private static func string(
        _ field: FieldPath, in message: UnsafeRawBufferPointer, rule: GRPCRouteRule, expecting collection: ResourceCollection?
    ) throws(ProxyFailure) -> Bytes {
        let lookup: ProtobufReader.Lookup
        do {
            lookup = try ProtobufReader.lengthDelimitedField(at: field.numbers[...], in: message)
        } catch {
            throw .invalidEntity("request message is not valid protobuf: \(error)")
        }
        switch lookup {
        case .found(let bytes) where !bytes.isEmpty:
            return bytes.assumingMemoryBound(to: UInt8.self)[...]
        case .found, .missing:
            // proto3 does not tell an empty string from an absent one.
            var text = "\(rule.method) request has no \(field)"
            if let collection { text += "; expected \(template(collection))" }
            throw .invalidEntity(text)
        case .repeated:
            throw .invalidEntity("\(rule.method) request is ambiguous: \(field) appears more than once")
        }
    }

    /// The provider id of a `providers/{p}` parent.
    private static func parent(_ field: FieldPath, in message: UnsafeRawBufferPointer, rule: GRPCRouteRule) throws(ProxyFailure) -> String {
        let value = try string(field, in: message, rule: rule, expecting: nil)
        guard let slash = value.firstIndex(of: slashByte), ByteView(value[..<slash]) == "providers",
              !value[(slash + 1)...].contains(slashByte)
        else {
            throw .invalidEntity("\(rule.method) request: \(field) \(quoted(value)) is not providers/{provider}")
        }
        return try validID(value[(slash + 1)...], noun: "provider id")
    }

    /// Provider and id of `providers/{p}/{collection}/{id}`.
    private static func resourceName(
        _ name: Bytes, field: FieldPath, rule: GRPCRouteRule, collection: ResourceCollection
    ) throws(ProxyFailure) -> (provider: String, id: String) {
        var rest = name
        guard let providers = segment(&rest), ByteView(providers) == "providers",
              let provider = segment(&rest),
              let collectionName = segment(&rest), ByteView(collectionName) == collection.name
        else {
            throw .invalidEntity("\(rule.method) request: \(field) \(quoted(name)) is not \(template(collection))")
        }
        // What is left is the id; a further '/' in it is refused by the id rules.
        return (try validID(provider, noun: "provider id"), try validID(rest, noun: collection.idNoun))
    }

    /// The bytes up to the next '/', consuming them and the '/'; nil when no '/' is left.
    private static func segment(_ rest: inout Bytes) -> Bytes? {
        guard let slash = rest.firstIndex(of: slashByte) else { return nil }
        defer { rest = rest[(slash + 1)...] }
        return rest[..<slash]
    }

    /// Checks an id against docs/CONTRACT.md §2 and copies it out.
    private static func validID(_ raw: Bytes, noun: String) throws(ProxyFailure) -> String {
        let bytes = UnsafeBufferPointer(rebasing: raw)
        // 64 scalars are at most 256 bytes: refuse anything longer before looking at it.
        if bytes.count > EntityID.maxLength * 4 {
            throw .invalidEntity("\(noun) \(quoted(raw)) \(EntityID.Problem.tooLong)")
        }
        // Protobuf strings must be UTF-8; repairing bad bytes could make two wire ids one.
        // Most ids are ASCII, which needs no decoding to know.
        guard bytes.allSatisfy({ $0 < 0x80 }) || PercentDecoding.isValidUTF8(bytes) else {
            throw .invalidEntity("\(noun) \(quoted(raw)) is not valid UTF-8")
        }
        if let problem = EntityID.problem(utf8: bytes) {
            throw .invalidEntity("\(noun) \(quoted(raw)) \(problem)")
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    // MARK: - Helpers

    private static let slashByte = UInt8(ascii: "/")

    private static func template(_ collection: ResourceCollection) -> String {
        "providers/{provider}/\(collection.name)/{id}"
    }

    /// Client input for a message, cut and cleaned as REST messages are.
    private static func quoted(_ bytes: Bytes) -> String {
        // Only the first bytes can be shown: no need to copy a huge string to cut it.
        let shown = bytes.prefix(RESTRoute.echoLimit * 4 + 4)
        return RESTRoute.quoted(String(decoding: UnsafeBufferPointer(rebasing: shown), as: UTF8.self))
    }
}
