/// The kind of Fleet Engine entity a token is scoped to (SPEC §3).
public enum EntityType: String, Sendable, CaseIterable, Hashable {
    case vehicle
    case trip
    case deliveryVehicle = "delivery_vehicle"
    case task
    case tracking
    /// Calls that name no single entity (listings, searches): the wildcard token.
    case fleet
}

/// What a token is cached under: the Google Cloud project plus the entity.
public struct EntityKey: Hashable, Sendable, CustomStringConvertible {
    public var provider: String
    public var type: EntityType
    /// The percent-decoded, validated entity id; `*` for `.fleet`.
    public var id: String

    public init(provider: String, type: EntityType, id: String) {
        self.provider = provider
        self.type = type
        self.id = id
    }

    public static func fleet(provider: String) -> EntityKey {
        EntityKey(provider: provider, type: .fleet, id: "*")
    }

    public var description: String { "\(provider)/\(type.rawValue)/\(id)" }
}
