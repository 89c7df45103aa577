/// The Fleet Engine collections a REST path or a gRPC resource name can name (gRPC names are
/// compared byte for byte, REST segments after percent-decoding).
enum ResourceCollection: CaseIterable, Sendable, Hashable {
    case vehicles, trips, deliveryVehicles, tasks, taskTrackingInfo, billableTrips

    var name: StaticString {
        switch self {
        case .vehicles: return "vehicles"
        case .trips: return "trips"
        case .deliveryVehicles: return "deliveryVehicles"
        case .tasks: return "tasks"
        case .taskTrackingInfo: return "taskTrackingInfo"
        case .billableTrips: return "billableTrips"
        }
    }

    /// How error messages name this collection's ids.
    var idNoun: String {
        switch self {
        case .vehicles: return "vehicle id"
        case .trips: return "trip id"
        case .deliveryVehicles: return "delivery vehicle id"
        case .tasks: return "task id"
        case .taskTrackingInfo: return "tracking id"
        case .billableTrips: return "billable trip id"
        }
    }
}
