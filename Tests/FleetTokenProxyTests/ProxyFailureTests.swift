import XCTest
@testable import FleetTokenProxy

/// docs/CONTRACT.md §5 and §7: how each way the sidecar refuses a call reads to REST and gRPC clients.
final class ProxyFailureTests: XCTestCase {
    func testEveryFailureMapsToTheSpecifiedStatuses() {
        let table: [(ProxyFailure, http: Int, grpc: Int, name: String)] = [
            (.notFleetEngineCall("x"), 404, 12, "NOT_FOUND"),
            (.invalidEntity("x"), 400, 3, "INVALID_ARGUMENT"),
            (.providerRefused("x"), 403, 7, "PERMISSION_DENIED"),
            (.providerUnavailable("x"), 503, 14, "UNAVAILABLE"),
            (.providerAnswerUnusable("x"), 502, 14, "UNAVAILABLE"),
            (.upstreamUnavailable("x"), 502, 14, "UNAVAILABLE"),
            (.requestTooLarge("x"), 413, 8, "RESOURCE_EXHAUSTED"),
            (.malformedRequest("x"), 400, 3, "INVALID_ARGUMENT"),
            (.overloaded("x"), 503, 8, "UNAVAILABLE"),
        ]
        for (failure, http, grpc, name) in table {
            XCTAssertEqual(failure.httpStatus, http, "\(failure)")
            XCTAssertEqual(failure.grpcStatus, grpc, "\(failure)")
            XCTAssertEqual(failure.statusName, name, "\(failure)")
            XCTAssertEqual(failure.message, "x")
        }
    }

    func testOverloadIsSaidInTheRESTErrorBody() {
        let body = String(decoding: ErrorResponse.jsonBody(.overloaded("budget spent")), as: UTF8.self)
        XCTAssertEqual(body, "{\"error\":{\"code\":503,\"message\":\"budget spent\",\"status\":\"UNAVAILABLE\"}}\n")
    }
}
