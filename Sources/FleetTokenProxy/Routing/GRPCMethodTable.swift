/// The Fleet Engine gRPC services (docs/CONTRACT.md §3).
package enum GRPCService: String, Sendable, CaseIterable {
    case vehicles = "maps.fleetengine.v1.VehicleService"
    case trips = "maps.fleetengine.v1.TripService"
    case delivery = "maps.fleetengine.delivery.v1.DeliveryService"
}

/// One row of the docs/CONTRACT.md §3 gRPC table: a Fleet Engine method and where its request message
/// names the entity. Found with `GRPCRoute.rule(forPath:)`.
///
/// A class: the table is built once and each call only holds a reference to its row.
/// Immutable, hence `Sendable`.
package final class GRPCRouteRule: Sendable, Hashable, CustomStringConvertible {
    package let service: GRPCService
    /// The method name, e.g. `GetVehicle`.
    package let method: String
    /// The entity the call's token is scoped to; `.fleet` for listings, searches and reports.
    package let entityType: EntityType
    /// Where the request message names the entity.
    let source: EntitySource
    /// The HTTP/2 `:path` of the method.
    package let path: String

    init(service: GRPCService, method: String, entityType: EntityType, source: EntitySource) {
        self.service = service
        self.method = method
        self.entityType = entityType
        self.source = source
        path = "/\(service.rawValue)/\(method)"
    }

    package var description: String { "\(service.rawValue)/\(method)" }

    package static func == (lhs: GRPCRouteRule, rhs: GRPCRouteRule) -> Bool { lhs.path == rhs.path }

    package func hash(into hasher: inout Hasher) { hasher.combine(path) }
}

/// A field of a request message, or a field of an embedded message (`task.name`: field 3,
/// then field 1), named for error messages.
struct FieldPath: Sendable, Hashable, CustomStringConvertible {
    /// Field numbers, outermost first.
    let numbers: [Int]
    /// The proto field names joined with dots.
    let name: String

    init(_ fields: (name: String, number: Int)...) {
        numbers = fields.map(\.number)
        name = fields.map(\.name).joined(separator: ".")
    }

    /// `name (field 3)`, `task.name (field 1 of field 3)`
    var description: String {
        "\(name) (" + numbers.reversed().map { "field \($0)" }.joined(separator: " of ") + ")"
    }
}

/// Where a request message names its entity.
enum EntitySource: Sendable, Hashable {
    /// A resource name `providers/{p}/{collection}/{id}` at a field path (`name`, or
    /// `task.name` in an embedded message).
    case resourceName(FieldPath, ResourceCollection)
    /// A create call: the provider from `parent` (`providers/{p}`), the new entity's id from
    /// a field of its own.
    case createdID(parent: FieldPath, id: FieldPath, ResourceCollection)
    /// A fleet call naming its provider in `parent` (`providers/{p}`).
    case fleetParent(FieldPath)
    /// A fleet call naming its provider in a resource name, whose id is validated too.
    case fleetResourceName(FieldPath, ResourceCollection)
}

/// docs/CONTRACT.md §3's gRPC table, with the field numbers of the Fleet Engine protos
/// (`google/maps/fleetengine/v1/{vehicle,trip}_api.proto`,
/// `google/maps/fleetengine/delivery/v1/delivery_api.proto`).
package enum GRPCMethodTable {
    private static let name2 = FieldPath(("name", 2))
    private static let name3 = FieldPath(("name", 3))
    private static let parent1 = FieldPath(("parent", 1))
    private static let parent3 = FieldPath(("parent", 3))

    package static let rules: [GRPCRouteRule] = [
        // maps.fleetengine.v1.VehicleService
        rule(.vehicles, "GetVehicle", .vehicle, .resourceName(name3, .vehicles)),
        rule(.vehicles, "UpdateVehicle", .vehicle, .resourceName(name3, .vehicles)),
        rule(.vehicles, "UpdateVehicleAttributes", .vehicle, .resourceName(name3, .vehicles)),
        rule(.vehicles, "DeleteVehicle", .vehicle, .resourceName(name2, .vehicles)),
        rule(.vehicles, "CreateVehicle", .vehicle, .createdID(parent: parent3, id: FieldPath(("vehicle_id", 4)), .vehicles)),
        rule(.vehicles, "ListVehicles", .fleet, .fleetParent(parent1)),
        rule(.vehicles, "SearchVehicles", .fleet, .fleetParent(parent3)),

        // maps.fleetengine.v1.TripService
        rule(.trips, "GetTrip", .trip, .resourceName(name3, .trips)),
        rule(.trips, "UpdateTrip", .trip, .resourceName(name3, .trips)),
        rule(.trips, "DeleteTrip", .trip, .resourceName(name2, .trips)),
        rule(.trips, "CreateTrip", .trip, .createdID(parent: parent3, id: FieldPath(("trip_id", 5)), .trips)),
        rule(.trips, "SearchTrips", .fleet, .fleetParent(parent3)),
        rule(.trips, "ReportBillableTrip", .fleet, .fleetResourceName(name2, .billableTrips)),

        // maps.fleetengine.delivery.v1.DeliveryService
        rule(.delivery, "GetDeliveryVehicle", .deliveryVehicle, .resourceName(name3, .deliveryVehicles)),
        rule(.delivery, "DeleteDeliveryVehicle", .deliveryVehicle, .resourceName(name2, .deliveryVehicles)),
        rule(.delivery, "CreateDeliveryVehicle", .deliveryVehicle,
             .createdID(parent: parent3, id: FieldPath(("delivery_vehicle_id", 4)), .deliveryVehicles)),
        rule(.delivery, "UpdateDeliveryVehicle", .deliveryVehicle,
             .resourceName(FieldPath(("delivery_vehicle", 3), ("name", 1)), .deliveryVehicles)),
        rule(.delivery, "ListDeliveryVehicles", .fleet, .fleetParent(parent3)),
        rule(.delivery, "GetTask", .task, .resourceName(name3, .tasks)),
        rule(.delivery, "DeleteTask", .task, .resourceName(name2, .tasks)),
        rule(.delivery, "CreateTask", .task, .createdID(parent: parent3, id: FieldPath(("task_id", 5)), .tasks)),
        rule(.delivery, "UpdateTask", .task, .resourceName(FieldPath(("task", 3), ("name", 1)), .tasks)),
        rule(.delivery, "ListTasks", .fleet, .fleetParent(parent3)),
        rule(.delivery, "BatchCreateTasks", .fleet, .fleetParent(parent3)),
        rule(.delivery, "GetTaskTrackingInfo", .tracking, .resourceName(name3, .taskTrackingInfo)),
    ]

    /// The rule for a `:path`. A scan rather than a dictionary: comparing lengths rules out
    /// most rows at once, and the few left cost a `memcmp` each, less than hashing the path.
    static func rule(forPath path: String) -> GRPCRouteRule? {
        let length = path.utf8.count
        for rule in rules where rule.path.utf8.count == length && rule.path == path {
            return rule
        }
        return nil
    }

    private static func rule(
        _ service: GRPCService, _ method: String, _ type: EntityType, _ source: EntitySource
    ) -> GRPCRouteRule {
        GRPCRouteRule(service: service, method: method, entityType: type, source: source)
    }
}
