/// The kind of Fleet Engine entity a token is scoped to (docs/CONTRACT.md §3).
package enum EntityType: String, Sendable, CaseIterable, Hashable {
    case vehicle
    case trip
    case deliveryVehicle = "delivery_vehicle"
    case task
    case tracking
    /// Calls that name no single entity (listings, searches): the wildcard token.
    case fleet

    /// A number per case, for `EntityKey`'s hashing and comparison: the defaults of a
    /// raw-valued enum go through `rawValue`, building a String each time.
    var ordinal: UInt8 {
        switch self {
        case .vehicle: return 0
        case .trip: return 1
        case .deliveryVehicle: return 2
        case .task: return 3
        case .tracking: return 4
        case .fleet: return 5
        }
    }
}

/// What a token is cached under: the Google Cloud project plus the entity.
package struct EntityKey: Hashable, Sendable, CustomStringConvertible {
    package var provider: String
    package var type: EntityType
    /// The percent-decoded, validated entity id; `*` for `.fleet`.
    package var id: String

    package init(provider: String, type: EntityType, id: String) {
        self.provider = provider
        self.type = type
        self.id = id
    }

    package static func fleet(provider: String) -> EntityKey {
        EntityKey(provider: provider, type: .fleet, id: "*")
    }

    package var description: String { "\(provider)/\(type.rawValue)/\(id)" }

    /// Written out because the token cache hashes and compares a key on every call, and the
    /// synthesized versions read `type` through its String `rawValue`. The id is compared
    /// first: it is the part in which most keys differ.
    package static func == (lhs: EntityKey, rhs: EntityKey) -> Bool {
        lhs.id == rhs.id && lhs.type.ordinal == rhs.type.ordinal && lhs.provider == rhs.provider
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(provider)
        hasher.combine(type.ordinal)
        hasher.combine(id)
    }
}
