import XCTest
@testable import FleetTokenProxy

final class GRPCRouteTests: XCTestCase {
    private static let vehicleService = "/maps.fleetengine.v1.VehicleService/"
    private static let tripService = "/maps.fleetengine.v1.TripService/"
    private static let deliveryService = "/maps.fleetengine.delivery.v1.DeliveryService/"

    private let provider = "my-project"

    // MARK: - Helpers

    private typealias Encoder = ProtobufTestEncoder

    private func classify(_ path: String, _ message: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> Result<EntityKey, ProxyFailure>? {
        guard let rule = GRPCRoute.rule(forPath: path) else {
            XCTFail("no rule for \(path)", file: file, line: line)
            return nil
        }
        // An exact-size copy: reading past the message would leave the allocation.
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: message.count, alignment: 1)
        defer { copy.deallocate() }
        copy.copyBytes(from: message)
        return GRPCRoute.classify(rule: rule, message: UnsafeRawBufferPointer(copy))
    }

    private func assertEntity(
        _ path: String, _ message: [UInt8], _ expected: EntityKey, file: StaticString = #filePath, line: UInt = #line
    ) {
        switch classify(path, message, file: file, line: line) {
        case .success(let key): XCTAssertEqual(key, expected, path, file: file, line: line)
        case .failure(let failure): XCTFail("\(path) failed: \(failure)", file: file, line: line)
        case nil: break
        }
    }

    /// Returns the message so tests can check what an operator is told.
    @discardableResult
    private func assertInvalid(_ path: String, _ message: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> String {
        let result = classify(path, message, file: file, line: line)
        guard case .failure(let failure) = result, case .invalidEntity(let text) = failure else {
            XCTFail("\(path): expected INVALID_ARGUMENT, got \(String(describing: result))", file: file, line: line)
            return ""
        }
        XCTAssertEqual(failure.grpcStatus, 3, file: file, line: line)
        return text
    }

    private func key(_ type: EntityType, _ id: String) -> EntityKey { EntityKey(provider: provider, type: type, id: id) }
    private var fleet: EntityKey { .fleet(provider: provider) }

    /// A RequestHeader (field 1 of most requests) with language_code and region_code, so
    /// routes are checked against messages that hold more than the one field they read.
    private func header(_ e: inout Encoder, field: Int = 1) {
        e.messageField(field) { $0.stringField(1, "en-US"); $0.stringField(2, "US"); $0.varintField(5, 1) }
    }

    private func timestamp(_ e: inout Encoder, field: Int) {
        e.messageField(field) { $0.varintField(1, 1_700_000_000); $0.varintField(2, 5) }
    }

    // MARK: - The table, row by row

    /// One request per method of docs/CONTRACT.md §3, shaped like the official client's (field numbers of
    /// the Fleet Engine protos), with the entity the call must be keyed on.
    private func tableRows() -> [(path: String, message: [UInt8], expected: EntityKey)] {
        let v = Self.vehicleService, t = Self.tripService, d = Self.deliveryService
        let p = "providers/\(provider)"
        return [
            (v + "GetVehicle", Encoder.message {
                header(&$0)
                $0.stringField(3, "\(p)/vehicles/v-1")
                timestamp(&$0, field: 4)
            }, key(.vehicle, "v-1")),
            (v + "UpdateVehicle", Encoder.message {
                header(&$0)
                // The vehicle's own name is not what the server acts on: the request's is.
                $0.messageField(4) { $0.stringField(1, "\(p)/vehicles/other"); $0.varintField(2, 2) }
                $0.stringField(3, "\(p)/vehicles/v-2")
                $0.messageField(5) { $0.stringField(1, "vehicle_state") }
            }, key(.vehicle, "v-2")),
            (v + "UpdateVehicleAttributes", Encoder.message {
                header(&$0)
                $0.stringField(3, "\(p)/vehicles/v-3")
                $0.messageField(4) { $0.stringField(1, "colour"); $0.stringField(2, "red") }
                $0.messageField(4) { $0.stringField(1, "seats"); $0.stringField(2, "4") }
            }, key(.vehicle, "v-3")),
            (v + "DeleteVehicle", Encoder.message {
                header(&$0)
                $0.stringField(2, "\(p)/vehicles/v-4")
            }, key(.vehicle, "v-4")),
            (v + "CreateVehicle", Encoder.message {
                header(&$0)
                $0.stringField(3, p)
                $0.stringField(4, "v-5")
                $0.messageField(5) { $0.varintField(2, 1); $0.varintField(6, 4) }
            }, key(.vehicle, "v-5")),
            (v + "ListVehicles", Encoder.message {
                header(&$0, field: 12)
                $0.stringField(1, p)
                $0.varintField(3, 50)
                $0.stringField(4, "page-token")
            }, fleet),
            (v + "SearchVehicles", Encoder.message {
                header(&$0)
                $0.stringField(3, p)
                $0.messageField(4) { $0.messageField(1) { $0.fixed64Field(1, 0); $0.fixed64Field(2, 0) } }
                $0.varintField(6, 400)
                $0.varintField(7, 10)
                $0.stringField(19, "trip-ignored")
            }, fleet),

            (t + "GetTrip", Encoder.message {
                header(&$0)
                $0.stringField(3, "\(p)/trips/t-1")
                $0.varintField(11, 2)
            }, key(.trip, "t-1")),
            (t + "UpdateTrip", Encoder.message {
                header(&$0)
                $0.stringField(3, "\(p)/trips/t-2")
                $0.messageField(4) { $0.stringField(2, "v-1"); $0.varintField(3, 2) }
                $0.messageField(5) { $0.stringField(1, "trip_status") }
            }, key(.trip, "t-2")),
            (t + "DeleteTrip", Encoder.message {
                header(&$0)
                $0.stringField(2, "\(p)/trips/t-3")
            }, key(.trip, "t-3")),
            (t + "CreateTrip", Encoder.message {
                header(&$0)
                $0.stringField(3, p)
                $0.messageField(4) { $0.varintField(4, 1) }
                $0.stringField(5, "t-4")
            }, key(.trip, "t-4")),
            (t + "SearchTrips", Encoder.message {
                header(&$0)
                $0.stringField(3, p)
                $0.stringField(4, "v-ignored")
                $0.varintField(5, 1)
            }, fleet),
            (t + "ReportBillableTrip", Encoder.message {
                $0.stringField(2, "\(p)/billableTrips/b-1")
                $0.stringField(3, "US")
                $0.varintField(5, 1)
                $0.stringField(6, "t-related")
            }, fleet),

            (d + "GetDeliveryVehicle", Encoder.message {
                header(&$0)
                $0.stringField(3, "\(p)/deliveryVehicles/dv-1")
            }, key(.deliveryVehicle, "dv-1")),
            (d + "DeleteDeliveryVehicle", Encoder.message {
                header(&$0)
                $0.stringField(2, "\(p)/deliveryVehicles/dv-2")
            }, key(.deliveryVehicle, "dv-2")),
            (d + "CreateDeliveryVehicle", Encoder.message {
                header(&$0)
                $0.stringField(3, p)
                $0.stringField(4, "dv-3")
                $0.messageField(5) { $0.varintField(10, 1) }
            }, key(.deliveryVehicle, "dv-3")),
            (d + "UpdateDeliveryVehicle", Encoder.message {
                header(&$0)
                $0.messageField(3) {
                    $0.messageField(2) { $0.messageField(1) { $0.fixed64Field(1, 0) } }
                    $0.stringField(1, "\(p)/deliveryVehicles/dv-4")
                    $0.varintField(3, 1)
                }
                $0.messageField(4) { $0.stringField(1, "last_location") }
            }, key(.deliveryVehicle, "dv-4")),
            (d + "ListDeliveryVehicles", Encoder.message {
                header(&$0)
                $0.stringField(3, p)
                $0.varintField(4, 20)
                $0.stringField(6, "attributes.zone = \"north\"")
            }, fleet),
            (d + "GetTask", Encoder.message {
                header(&$0)
                $0.stringField(3, "\(p)/tasks/task-1")
            }, key(.task, "task-1")),
            (d + "DeleteTask", Encoder.message {
                header(&$0)
                $0.stringField(2, "\(p)/tasks/task-2")
            }, key(.task, "task-2")),
            (d + "CreateTask", Encoder.message {
                header(&$0)
                $0.stringField(3, p)
                $0.messageField(4) { $0.varintField(2, 1); $0.stringField(4, "tracking-1") }
                $0.stringField(5, "task-3")
            }, key(.task, "task-3")),
            (d + "UpdateTask", Encoder.message {
                header(&$0)
                $0.messageField(3) {
                    $0.varintField(3, 2)
                    $0.stringField(1, "\(p)/tasks/task-4")
                    $0.varintField(9, 1)
                }
                $0.messageField(4) { $0.stringField(1, "task_outcome") }
            }, key(.task, "task-4")),
            (d + "ListTasks", Encoder.message {
                header(&$0)
                $0.stringField(3, p)
                $0.varintField(4, 100)
            }, fleet),
            (d + "BatchCreateTasks", Encoder.message {
                header(&$0)
                $0.stringField(3, p)
                $0.messageField(4) { $0.stringField(3, p); $0.stringField(5, "task-a") }
                $0.messageField(4) { $0.stringField(3, p); $0.stringField(5, "task-b") }
            }, fleet),
            (d + "GetTaskTrackingInfo", Encoder.message {
                header(&$0)
                $0.stringField(3, "\(p)/taskTrackingInfo/track-1")
            }, key(.tracking, "track-1")),
        ]
    }

    func testEveryMethodOfTheTableGivesItsEntity() {
        for row in tableRows() {
            assertEntity(row.path, row.message, row.expected)
        }
    }

    func testTableHoldsExactlyTheMethodsOfTheSpec() {
        let expected = Set(tableRows().map(\.path))
        XCTAssertEqual(expected.count, 25)
        XCTAssertEqual(Set(GRPCMethodTable.rules.map(\.path)), expected)
        XCTAssertEqual(GRPCMethodTable.rules.count, 25)
        for row in tableRows() {
            XCTAssertEqual(GRPCRoute.rule(forPath: row.path)?.entityType, row.expected.type, row.path)
            XCTAssertEqual(GRPCRoute.rule(forPath: row.path)?.path, row.path)
        }
    }

    func testEveryEntityRowFailsWithoutItsField() {
        // An empty request names nothing: the table must not fall back to any default.
        for row in tableRows() {
            let message = assertInvalid(row.path, [])
            XCTAssertTrue(message.contains("has no"), "\(row.path): \(message)")
        }
    }

    // MARK: - Methods that are not Fleet Engine calls

    func testUnknownMethodsHaveNoRule() {
        let paths = [
            "",
            "/",
            Self.vehicleService + "UpdateVehicleLocation",   // REST only; gone from the gRPC API
            Self.vehicleService + "SearchFuzzedVehicles",
            Self.vehicleService + "getVehicle",
            Self.vehicleService + "GetVehicle/",
            Self.vehicleService + "GetVehicle?x=1",
            Self.tripService + "GetVehicle",                 // right method, wrong service
            Self.deliveryService + "SearchTasks",
            "maps.fleetengine.v1.VehicleService/GetVehicle", // no leading '/'
            "/maps.fleetengine.v2.VehicleService/GetVehicle",
            "/grpc.health.v1.Health/Check",
            "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
            "/v1/providers/my-project/vehicles/v1",
        ]
        for path in paths {
            XCTAssertNil(GRPCRoute.rule(forPath: path), path)
        }
    }

    // MARK: - Resource names

    func testNameFromAnotherCollectionIsRefused() {
        let cases: [(String, Int, String, String)] = [
            (Self.vehicleService + "GetVehicle", 3, "providers/my-project/trips/t-1", "providers/{provider}/vehicles/{id}"),
            (Self.tripService + "DeleteTrip", 2, "providers/my-project/vehicles/v-1", "providers/{provider}/trips/{id}"),
            (Self.deliveryService + "GetDeliveryVehicle", 3, "providers/my-project/vehicles/v-1", "providers/{provider}/deliveryVehicles/{id}"),
            (Self.deliveryService + "GetTask", 3, "providers/my-project/taskTrackingInfo/x", "providers/{provider}/tasks/{id}"),
            (Self.deliveryService + "GetTaskTrackingInfo", 3, "providers/my-project/tasks/x", "providers/{provider}/taskTrackingInfo/{id}"),
            (Self.tripService + "ReportBillableTrip", 2, "providers/my-project/trips/t-1", "providers/{provider}/billableTrips/{id}"),
            (Self.vehicleService + "GetVehicle", 3, "providers/my-project/Vehicles/v-1", "providers/{provider}/vehicles/{id}"),
        ]
        for (path, field, name, template) in cases {
            let message = assertInvalid(path, Encoder.message { $0.stringField(field, name) })
            XCTAssertTrue(message.contains("'\(name)'") && message.contains(template), message)
        }
    }

    func testNameOfTheWrongShapeIsRefused() {
        let get = Self.vehicleService + "GetVehicle"
        for name in [
            "projects/my-project/vehicles/v-1",
            "/providers/my-project/vehicles/v-1",
            "providers/my-project/vehicles",
            "providers/my-project",
            "providers",
            "vehicles/v-1",
            "v-1",
        ] {
            assertInvalid(get, Encoder.message { $0.stringField(3, name) })
        }
    }

    func testNameWithExtraSegmentsIsRefusedByTheIdRules() {
        let message = assertInvalid(Self.vehicleService + "GetVehicle",
                                    Encoder.message { $0.stringField(3, "providers/my-project/vehicles/v-1/trips/t-1") })
        XCTAssertTrue(message.contains("vehicle id 'v-1/trips/t-1' contains '/'"), message)
    }

    func testInvalidIdsAreRefused() {
        let get = Self.tripService + "GetTrip"
        let cases = [
            ("t#1", "contains '#'"),
            ("t:1", "contains ':'"),
            ("t?1", "contains '?'"),
            ("t\\1", "contains '\\'"),
            ("t\u{7}1", "control character"),
            ("t\u{85}1", "control character"),
            ("", "is empty"),
            (String(repeating: "x", count: 65), "longer than 64"),
            (String(repeating: "é", count: 65), "longer than 64"),
            (String(repeating: "x", count: 100_000), "longer than 64"),
        ]
        for (id, problem) in cases {
            let message = assertInvalid(get, Encoder.message { $0.stringField(3, "providers/my-project/trips/\(id)") })
            XCTAssertTrue(message.hasPrefix("trip id ") && message.contains(problem), "\(id.prefix(10)): \(message)")
        }
    }

    func testInvalidProviderIsRefused() {
        for (name, problem) in [
            ("providers//vehicles/v-1", "is empty"),
            ("providers/my#project/vehicles/v-1", "contains '#'"),
            ("providers/\(String(repeating: "p", count: 65))/vehicles/v-1", "longer than 64"),
        ] {
            let message = assertInvalid(Self.vehicleService + "GetVehicle", Encoder.message { $0.stringField(3, name) })
            XCTAssertTrue(message.hasPrefix("provider id ") && message.contains(problem), message)
        }
    }

    func testIdNotValidUTF8IsRefused() {
        let name = Array("providers/my-project/vehicles/v".utf8) + [0xC3, 0x28]
        let message = assertInvalid(Self.vehicleService + "GetVehicle", Encoder.message { $0.bytesField(3, name) })
        XCTAssertTrue(message.contains("not valid UTF-8"), message)
        let overlong = Array("providers/my-project/vehicles/".utf8) + [0xC0, 0xAF] // overlong '/'
        assertInvalid(Self.vehicleService + "GetVehicle", Encoder.message { $0.bytesField(3, overlong) })
    }

    func testIdsAreTakenLiterallyNotPercentDecoded() {
        assertEntity(Self.vehicleService + "GetVehicle",
                     Encoder.message { $0.stringField(3, "providers/my-project/vehicles/v%2F1") }, key(.vehicle, "v%2F1"))
        assertEntity(Self.vehicleService + "GetVehicle",
                     Encoder.message { $0.stringField(3, "providers/my-project/vehicles/a+b") }, key(.vehicle, "a+b"))
    }

    func testUnicodeIdsOfUpToSixtyFourCharactersAreAccepted() {
        let id = "véhicule-北京-🚚" + String(repeating: "é", count: 64 - 13)
        XCTAssertEqual(id.unicodeScalars.count, 64)
        assertEntity(Self.deliveryService + "GetDeliveryVehicle",
                     Encoder.message { $0.stringField(3, "providers/my-project/deliveryVehicles/\(id)") },
                     key(.deliveryVehicle, id))
    }

    func testEchoedInputIsCappedAt64Characters() {
        let huge = "providers/my-project/trips/" + String(repeating: "z", count: 10_000)
        let message = assertInvalid(Self.vehicleService + "GetVehicle", Encoder.message { $0.stringField(3, huge) })
        XCTAssertLessThan(message.count, 200, message)
        XCTAssertTrue(message.contains("\u{2026}"), message)
    }

    // MARK: - Missing, empty, misplaced and repeated fields

    func testNameInAnotherFieldNumberIsMissing() {
        // GetVehicle reads field 3 and DeleteVehicle field 2, as the protos number them.
        let message = assertInvalid(Self.vehicleService + "GetVehicle",
                                    Encoder.message { $0.stringField(2, "providers/my-project/vehicles/v-1") })
        XCTAssertEqual(message, "GetVehicle request has no name (field 3); expected providers/{provider}/vehicles/{id}")
        assertInvalid(Self.vehicleService + "DeleteVehicle",
                      Encoder.message { $0.stringField(3, "providers/my-project/vehicles/v-1") })
    }

    func testEmptyNameIsMissing() {
        let message = assertInvalid(Self.tripService + "GetTrip", Encoder.message { $0.stringField(3, "") })
        XCTAssertTrue(message.contains("has no name (field 3)"), message)
    }

    func testNameGivenTwiceIsAmbiguous() {
        // A protobuf server keeps the last value; routing on either could key the wrong entity.
        let message = assertInvalid(Self.vehicleService + "GetVehicle", Encoder.message {
            $0.stringField(3, "providers/my-project/vehicles/mine")
            $0.stringField(3, "providers/my-project/vehicles/someone-elses")
        })
        XCTAssertEqual(message, "GetVehicle request is ambiguous: name (field 3) appears more than once")
    }

    func testCreateNeedsParentAndId() {
        let create = Self.vehicleService + "CreateVehicle"
        let noID = assertInvalid(create, Encoder.message { $0.stringField(3, "providers/my-project") })
        XCTAssertEqual(noID, "CreateVehicle request has no vehicle_id (field 4)")
        let noParent = assertInvalid(create, Encoder.message { $0.stringField(4, "v-1") })
        XCTAssertEqual(noParent, "CreateVehicle request has no parent (field 3)")
        let badID = assertInvalid(create, Encoder.message { $0.stringField(3, "providers/my-project"); $0.stringField(4, "v/1") })
        XCTAssertTrue(badID.hasPrefix("vehicle id 'v/1' contains '/'"), badID)
        assertInvalid(Self.tripService + "CreateTrip",
                      Encoder.message { $0.stringField(3, "providers/my-project"); $0.stringField(4, "t-1") })
        assertInvalid(Self.deliveryService + "CreateTask",
                      Encoder.message { $0.stringField(3, "providers/my-project"); $0.stringField(4, "task-1") })
    }

    func testParentMustBeJustTheProvider() {
        for parent in ["providers/my-project/vehicles", "providers/my-project/", "projects/my-project", "my-project", "providers"] {
            let message = assertInvalid(Self.vehicleService + "CreateVehicle",
                                        Encoder.message { $0.stringField(3, parent); $0.stringField(4, "v-1") })
            XCTAssertEqual(message, "CreateVehicle request: parent (field 3) '\(parent)' is not providers/{provider}")
        }
        let empty = assertInvalid(Self.vehicleService + "CreateVehicle",
                                  Encoder.message { $0.stringField(3, "providers/"); $0.stringField(4, "v-1") })
        XCTAssertEqual(empty, "provider id '' is empty")
        let message = assertInvalid(Self.tripService + "SearchTrips", Encoder.message { $0.stringField(3, "projects/p") })
        XCTAssertEqual(message, "SearchTrips request: parent (field 3) 'projects/p' is not providers/{provider}")
    }

    func testFleetCallsNeedTheirProvider() {
        // ListVehicles reads parent from field 1; its field 3 is page_size.
        assertInvalid(Self.vehicleService + "ListVehicles", Encoder.message { $0.stringField(3, "providers/my-project") })
        assertEntity(Self.vehicleService + "ListVehicles", Encoder.message { $0.stringField(1, "providers/other") },
                     .fleet(provider: "other"))
        // SearchVehicles and BatchCreateTasks read parent from field 3.
        assertInvalid(Self.vehicleService + "SearchVehicles", Encoder.message { $0.stringField(1, "providers/my-project") })
        assertInvalid(Self.deliveryService + "BatchCreateTasks", Encoder.message { $0.varintField(3, 1) })
    }

    func testBillableTripIdIsValidatedThoughTheTokenIsTheFleets() {
        let message = assertInvalid(Self.tripService + "ReportBillableTrip",
                                    Encoder.message { $0.stringField(2, "providers/my-project/billableTrips/b:1") })
        XCTAssertTrue(message.hasPrefix("billable trip id 'b:1'"), message)
    }

    // MARK: - Nested paths

    func testUpdateTaskReadsTheNameInsideTheTask() {
        let path = Self.deliveryService + "UpdateTask"
        // A name at the top level is not the task's name.
        let message = assertInvalid(path, Encoder.message {
            $0.stringField(1, "providers/my-project/tasks/top-level")
            $0.messageField(3) { $0.varintField(3, 2) }
        })
        XCTAssertEqual(message, "UpdateTask request has no task.name (field 1 of field 3); expected providers/{provider}/tasks/{id}")
        // The task sent in two parts is merged, as protobuf does.
        assertEntity(path, Encoder.message {
            $0.messageField(3) { $0.varintField(3, 2) }
            $0.messageField(4) { $0.stringField(1, "state") }
            $0.messageField(3) { $0.stringField(1, "providers/my-project/tasks/task-9") }
        }, key(.task, "task-9"))
        assertInvalid(path, Encoder.message {
            $0.messageField(3) { $0.stringField(1, "providers/my-project/tasks/a") }
            $0.messageField(3) { $0.stringField(1, "providers/my-project/tasks/b") }
        })
    }

    func testUpdateDeliveryVehicleReadsTheNameInsideTheVehicle() {
        let path = Self.deliveryService + "UpdateDeliveryVehicle"
        assertEntity(path, Encoder.message {
            $0.messageField(3) { $0.stringField(1, "providers/my-project/deliveryVehicles/dv-9") }
        }, key(.deliveryVehicle, "dv-9"))
        // The name in field 3 itself, as if it were GetDeliveryVehicle, is not a DeliveryVehicle.
        assertInvalid(path, Encoder.message { $0.stringField(3, "providers/my-project/deliveryVehicles/dv-9") })
        let wrong = assertInvalid(path, Encoder.message {
            $0.messageField(3) { $0.stringField(1, "providers/my-project/tasks/dv-9") }
        })
        XCTAssertTrue(wrong.contains("delivery_vehicle.name (field 1 of field 3)"), wrong)
    }

    // MARK: - Messages that are not valid protobuf

    func testMalformedMessageIsInvalidProtobuf() {
        let good = Encoder.message { header(&$0); $0.stringField(3, "providers/my-project/vehicles/v-1") }
        for bad in [Array(good.dropLast()), good + [0x0B], [0xFF, 0xFF], good + [0x1A, 0x10]] {
            let message = assertInvalid(Self.vehicleService + "GetVehicle", bad)
            XCTAssertTrue(message.hasPrefix("request message is not valid protobuf: "), message)
        }
    }

    func testNameSentAsANumberIsInvalidProtobuf() {
        let message = assertInvalid(Self.vehicleService + "GetVehicle", Encoder.message { $0.varintField(3, 7) })
        XCTAssertTrue(message.hasPrefix("request message is not valid protobuf: field 3 at byte 0 has wire type 0"), message)
    }

    func testEveryTruncationOfARealRequestFailsCleanly() {
        for row in tableRows() {
            var refused = 0
            for cut in 0..<row.message.count {
                // A cut between fields can be a valid shorter message, which may still name the
                // entity; a cut anywhere else must be refused, and never give another key.
                switch classify(row.path, Array(row.message.prefix(cut))) {
                case .success(let key): XCTAssertEqual(key, row.expected, "\(row.path) cut at \(cut)")
                case .failure(.invalidEntity): refused += 1
                case let other: XCTFail("\(row.path) cut at \(cut): \(String(describing: other))")
                }
            }
            XCTAssertGreaterThan(refused, row.message.count / 2, row.path)
        }
    }

    // MARK: - Together with framing and gzip

    func testGzipFramedRequestRoutesLikeThePlainOne() throws {
        let plain = Encoder.message { header(&$0); $0.stringField(3, "providers/my-project/trips/t-7") }
        let compressed = TestGzip.compress(plain)
        let length = UInt32(compressed.count)
        let frame: [UInt8] = [1, UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
            + compressed
        let rule = try XCTUnwrap(GRPCRoute.rule(forPath: Self.tripService + "GetTrip"))
        let key = try frame.withUnsafeBytes { bytes -> EntityKey in
            let first = GRPCMessageFrame.firstMessage(in: bytes)
            guard case .complete(true, let payload) = first else {
                XCTFail("frame read as \(first)")
                throw ProxyFailure.malformedRequest("frame")
            }
            let inflated = try GzipInflate.inflate(UnsafeRawBufferPointer(rebasing: bytes[payload])).get()
            return try inflated.withUnsafeBytes { try GRPCRoute.classify(rule: rule, message: $0).get() }
        }
        XCTAssertEqual(key, self.key(.trip, "t-7"))
    }
}
