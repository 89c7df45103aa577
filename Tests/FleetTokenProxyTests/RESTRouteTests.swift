import XCTest
@testable import FleetTokenProxy

final class RESTRouteTests: XCTestCase {
    private let base = "/v1/providers/my-project"

    // MARK: - Helpers

    private func assertEntity(
        _ method: String, _ target: String, _ expected: EntityKey,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        switch RESTRoute.classify(method: method, target: target) {
        case .success(let key):
            XCTAssertEqual(key, expected, "\(method) \(target)", file: file, line: line)
        case .failure(let failure):
            XCTFail("\(method) \(target) failed: \(failure)", file: file, line: line)
        }
    }

    private func assertNotFound(
        _ method: String, _ target: String, file: StaticString = #filePath, line: UInt = #line
    ) {
        let result = RESTRoute.classify(method: method, target: target)
        guard case .failure(let failure) = result, case .notFleetEngineCall = failure else {
            return XCTFail("\(method) \(target): expected 404, got \(result)", file: file, line: line)
        }
        XCTAssertEqual(failure.httpStatus, 404, file: file, line: line)
    }

    /// Returns the message so tests can check what an operator is told.
    @discardableResult
    private func assertInvalid(
        _ method: String, _ target: String, file: StaticString = #filePath, line: UInt = #line
    ) -> String {
        let result = RESTRoute.classify(method: method, target: target)
        guard case .failure(let failure) = result, case .invalidEntity(let message) = failure else {
            XCTFail("\(method) \(target): expected 400, got \(result)", file: file, line: line)
            return ""
        }
        XCTAssertEqual(failure.httpStatus, 400, file: file, line: line)
        return message
    }

    private func vehicle(_ id: String) -> EntityKey { EntityKey(provider: "my-project", type: .vehicle, id: id) }
    private var fleet: EntityKey { .fleet(provider: "my-project") }

    // MARK: - The REST table, row by row

    func testVehicleByIdAcceptsGetPutDelete() {
        for method in ["GET", "PUT", "DELETE"] {
            assertEntity(method, "\(base)/vehicles/v1", vehicle("v1"))
        }
        assertNotFound("POST", "\(base)/vehicles/v1")
        assertNotFound("PATCH", "\(base)/vehicles/v1")
    }

    func testVehicleUpdateAttributesAcceptsPostAndPut() {
        for method in ["POST", "PUT"] {
            assertEntity(method, "\(base)/vehicles/v1:updateAttributes", vehicle("v1"))
        }
        assertNotFound("GET", "\(base)/vehicles/v1:updateAttributes")
    }

    func testVehicleUpdateLocationAcceptsPostAndPut() {
        for method in ["POST", "PUT"] {
            assertEntity(method, "\(base)/vehicles/v1:updateLocation", vehicle("v1"))
        }
        assertNotFound("DELETE", "\(base)/vehicles/v1:updateLocation")
    }

    func testCreateVehicleTakesIdFromQuery() {
        assertEntity("POST", "\(base)/vehicles?vehicleId=v7", vehicle("v7"))
        assertNotFound("PUT", "\(base)/vehicles?vehicleId=v7")
    }

    func testListVehiclesUsesFleetKey() {
        assertEntity("GET", "\(base)/vehicles", fleet)
        assertEntity("GET", "\(base)/vehicles?pageSize=10&vehicleId=ignored", fleet)
        assertNotFound("DELETE", "\(base)/vehicles")
    }

    func testSearchVehiclesUsesFleetKey() {
        assertEntity("POST", "\(base)/vehicles:search", fleet)
        assertNotFound("GET", "\(base)/vehicles:search")
    }

    func testTripByIdAcceptsGetPutDelete() {
        for method in ["GET", "PUT", "DELETE"] {
            assertEntity(method, "\(base)/trips/t1", EntityKey(provider: "my-project", type: .trip, id: "t1"))
        }
        assertNotFound("PATCH", "\(base)/trips/t1")
        assertNotFound("POST", "\(base)/trips/t1")
    }

    func testCreateTripTakesIdFromQuery() {
        assertEntity("POST", "\(base)/trips?tripId=t9", EntityKey(provider: "my-project", type: .trip, id: "t9"))
        assertNotFound("DELETE", "\(base)/trips?tripId=t9")
    }

    func testListTripsUsesFleetKey() {
        assertEntity("GET", "\(base)/trips", fleet)
        assertNotFound("PATCH", "\(base)/trips")
    }

    func testSearchTripsUsesFleetKey() {
        assertEntity("POST", "\(base)/trips:search", fleet)
        assertNotFound("PUT", "\(base)/trips:search")
    }

    func testDeliveryVehicleByIdAcceptsGetPatchDelete() {
        let expected = EntityKey(provider: "my-project", type: .deliveryVehicle, id: "dv1")
        for method in ["GET", "PATCH", "DELETE"] {
            assertEntity(method, "\(base)/deliveryVehicles/dv1", expected)
        }
        assertNotFound("PUT", "\(base)/deliveryVehicles/dv1")
    }

    func testCreateDeliveryVehicleTakesIdFromQuery() {
        assertEntity("POST", "\(base)/deliveryVehicles?deliveryVehicleId=dv2",
                     EntityKey(provider: "my-project", type: .deliveryVehicle, id: "dv2"))
        assertNotFound("PUT", "\(base)/deliveryVehicles?deliveryVehicleId=dv2")
    }

    func testListDeliveryVehiclesUsesFleetKey() {
        assertEntity("GET", "\(base)/deliveryVehicles", fleet)
        assertNotFound("DELETE", "\(base)/deliveryVehicles")
    }

    func testTaskByIdAcceptsGetPatchDelete() {
        let expected = EntityKey(provider: "my-project", type: .task, id: "task-1")
        for method in ["GET", "PATCH", "DELETE"] {
            assertEntity(method, "\(base)/tasks/task-1", expected)
        }
        assertNotFound("PUT", "\(base)/tasks/task-1")
    }

    func testCreateTaskTakesIdFromQuery() {
        assertEntity("POST", "\(base)/tasks?taskId=task-2", EntityKey(provider: "my-project", type: .task, id: "task-2"))
        assertNotFound("PATCH", "\(base)/tasks?taskId=task-2")
    }

    func testListTasksUsesFleetKey() {
        assertEntity("GET", "\(base)/tasks?filter=state%3DOPEN", fleet)
        assertNotFound("PUT", "\(base)/tasks")
    }

    func testBatchCreateTasksUsesFleetKey() {
        assertEntity("POST", "\(base)/tasks:batchCreate", fleet)
        assertNotFound("GET", "\(base)/tasks:batchCreate")
    }

    func testTaskTrackingInfoIsTrackingEntity() {
        assertEntity("GET", "\(base)/taskTrackingInfo/track-1",
                     EntityKey(provider: "my-project", type: .tracking, id: "track-1"))
        assertNotFound("POST", "\(base)/taskTrackingInfo/track-1")
        assertNotFound("GET", "\(base)/taskTrackingInfo")
    }

    func testReportBillableTripUsesFleetKey() {
        assertEntity("POST", "\(base)/billableTrips/bt1:report", fleet)
        assertNotFound("GET", "\(base)/billableTrips/bt1:report")
        assertNotFound("POST", "\(base)/billableTrips/bt1")
    }

    func testBillableTripIdIsStillValidated() {
        let message = assertInvalid("POST", "\(base)/billableTrips/a%2Fb:report")
        XCTAssertTrue(message.contains("billable trip id"), message)
    }

    func testProviderIdBecomesPartOfTheKey() {
        assertEntity("GET", "/v1/providers/other/vehicles/v1", EntityKey(provider: "other", type: .vehicle, id: "v1"))
        assertEntity("GET", "/v1/providers/other/trips", .fleet(provider: "other"))
    }

    // MARK: - Methods and verbs

    func testMethodNamesAreCaseSensitive() {
        assertNotFound("get", "\(base)/vehicles/v1")
        assertNotFound("Post", "\(base)/vehicles?vehicleId=v1")
    }

    func testWrongMethodMessageListsAllowedMethods() {
        guard case .failure(.notFleetEngineCall(let message)) = RESTRoute.classify(method: "POST", target: "\(base)/trips/t1") else {
            return XCTFail("expected 404")
        }
        XCTAssertTrue(message.contains("GET, PUT, DELETE"), message)
    }

    func testUnknownCustomVerbIsNotFound() {
        assertNotFound("POST", "\(base)/vehicles/v1:frobnicate")
        assertNotFound("POST", "\(base)/trips/t1:updateLocation")
        assertNotFound("POST", "\(base)/vehicles:updateLocation")
        assertNotFound("POST", "\(base)/vehicles/v1:")
        assertNotFound("POST", "\(base)/deliveryVehicles:search")
    }

    func testEncodedVerbIsDecodedLikeAnySegmentText() {
        assertEntity("POST", "\(base)/vehicles/v1:update%4Cocation", vehicle("v1"))
    }

    func testEncodedColonStaysInTheIdAndIsInvalid() {
        // PUT is allowed on vehicles/{id}, so what decides the answer is the id "v1:updateLocation".
        let message = assertInvalid("PUT", "\(base)/vehicles/v1%3AupdateLocation")
        XCTAssertTrue(message.contains("':'"), message)
    }

    func testVerbIsSplitAtTheLastColon() {
        // "a:b" is the id, and ':' is not allowed in ids.
        assertInvalid("POST", "\(base)/vehicles/a:b:updateLocation")
    }

    // MARK: - Ids

    func testPercentEncodedSpaceInVehicleIdIsDecoded() {
        assertEntity("GET", "\(base)/vehicles/v%20one", vehicle("v one"))
    }

    func testPercentEncodedEuroSignInVehicleIdIsDecoded() {
        assertEntity("GET", "\(base)/vehicles/%E2%82%AC", vehicle("€"))
        assertEntity("GET", "\(base)/vehicles/%e2%82%ac", vehicle("€"))
    }

    func testPlusInPathIsALiteralPlus() {
        assertEntity("GET", "\(base)/vehicles/a+b", vehicle("a+b"))
    }

    func testEncodedSlashInVehicleIdIsInvalid() {
        let message = assertInvalid("GET", "\(base)/vehicles/a%2Fb")
        XCTAssertTrue(message.contains("vehicle id"), message)
        XCTAssertTrue(message.contains("'/'"), message)
    }

    func testEachForbiddenCharacterInPathIdIsInvalid() {
        for (encoded, character) in [("%2F", "/"), ("%3A", ":"), ("%5C", "\\"), ("%3F", "?"), ("%23", "#")] {
            let message = assertInvalid("GET", "\(base)/trips/a\(encoded)b")
            XCTAssertTrue(message.contains("'\(character)'"), "\(encoded): \(message)")
        }
    }

    func testRawBackslashAndHashInPathIdAreInvalid() {
        assertInvalid("GET", "\(base)/tasks/a\\b")
        assertInvalid("GET", "\(base)/tasks/a#b")
    }

    func testEachForbiddenCharacterInQueryIdIsInvalid() {
        for encoded in ["%2F", "%3A", "%5C", "%3F", "%23"] {
            assertInvalid("POST", "\(base)/vehicles?vehicleId=a\(encoded)b")
        }
    }

    func testVehicleIdOf64CharactersIsValid() {
        let id = String(repeating: "x", count: 64)
        assertEntity("GET", "\(base)/vehicles/\(id)", vehicle(id))
    }

    func testVehicleIdOf65CharactersIsInvalid() {
        let message = assertInvalid("GET", "\(base)/vehicles/\(String(repeating: "x", count: 65))")
        XCTAssertTrue(message.hasPrefix("vehicle id"), message)
        XCTAssertTrue(message.hasSuffix("is longer than 64 characters"), message)
    }

    func testLengthCountsDecodedCharactersNotEncodedBytes() {
        let euros64 = String(repeating: "%E2%82%AC", count: 64)
        assertEntity("GET", "\(base)/vehicles/\(euros64)", vehicle(String(repeating: "€", count: 64)))
        assertInvalid("GET", "\(base)/vehicles/\(euros64)%E2%82%AC")
    }

    func testControlCharactersInIdAreInvalid() {
        for encoded in ["%00", "%09", "%0A", "%0D", "%1F", "%7F", "%C2%85"] {
            let message = assertInvalid("GET", "\(base)/vehicles/a\(encoded)b")
            XCTAssertTrue(message.contains("control character"), "\(encoded): \(message)")
        }
    }

    func testMalformedPercentEscapeInIdIsInvalid() {
        assertInvalid("GET", "\(base)/vehicles/a%zz")
        assertInvalid("GET", "\(base)/vehicles/a%4")
        assertInvalid("GET", "\(base)/vehicles/a%")
    }

    func testEncodedBytesThatAreNotUTF8AreInvalid() {
        assertInvalid("GET", "\(base)/vehicles/%FF")
        assertInvalid("GET", "\(base)/vehicles/%E2%82")
        assertInvalid("POST", "\(base)/trips?tripId=%C0%AF")
    }

    func testQueryIdIsPercentDecodedWithPlusAsSpace() {
        assertEntity("POST", "\(base)/vehicles?vehicleId=v+one", vehicle("v one"))
        assertEntity("POST", "\(base)/vehicles?vehicleId=v%2Bone", vehicle("v+one"))
        assertEntity("POST", "\(base)/vehicles?vehicleId=%E2%82%AC", vehicle("€"))
    }

    func testQueryIdIsFoundAmongOtherParameters() {
        assertEntity("POST", "\(base)/vehicles?header.language=en&vehicleId=v2&flag", vehicle("v2"))
    }

    func testQueryParameterNameIsComparedAfterDecoding() {
        assertEntity("POST", "\(base)/vehicles?vehicle%49d=v3", vehicle("v3"))
    }

    func testQueryParameterNameIsCaseSensitive() {
        assertInvalid("POST", "\(base)/vehicles?vehicleid=v3")
    }

    func testCreateWithoutIdParameterIsMissingEntity() {
        let cases = [
            ("vehicles", "vehicleId"), ("trips", "tripId"),
            ("deliveryVehicles", "deliveryVehicleId"), ("tasks", "taskId"),
        ]
        for (collection, parameter) in cases {
            for target in ["\(base)/\(collection)", "\(base)/\(collection)?", "\(base)/\(collection)?other=1"] {
                let message = assertInvalid("POST", target)
                XCTAssertTrue(message.contains("missing"), message)
                XCTAssertTrue(message.contains(parameter), message)
            }
        }
    }

    func testCreateWithEmptyIdParameterIsInvalid() {
        XCTAssertTrue(assertInvalid("POST", "\(base)/trips?tripId=").contains("empty"))
        XCTAssertTrue(assertInvalid("POST", "\(base)/trips?tripId").contains("empty"))
    }

    func testIdParameterGivenTwiceIsInvalid() {
        assertInvalid("POST", "\(base)/vehicles?vehicleId=a&vehicleId=b")
    }

    func testIdParameterOfAnotherCollectionDoesNotCount() {
        assertInvalid("POST", "\(base)/trips?vehicleId=v1")
    }

    // MARK: - Provider id

    func testProviderIdIsPercentDecoded() {
        assertEntity("GET", "/v1/providers/my%20project/vehicles/v1", EntityKey(provider: "my project", type: .vehicle, id: "v1"))
    }

    func testEncodedSlashInProviderIdIsInvalid() {
        let message = assertInvalid("GET", "/v1/providers/a%2Fb/vehicles/v1")
        XCTAssertTrue(message.contains("provider id"), message)
    }

    func testMalformedProviderIdIsInvalid() {
        assertInvalid("GET", "/v1/providers/p%zz/vehicles")
        assertInvalid("GET", "/v1/providers/\(String(repeating: "p", count: 65))/vehicles")
    }

    // MARK: - Paths that are not Fleet Engine calls

    func testUnknownPathIsNotFound() {
        assertNotFound("GET", "/")
        assertNotFound("GET", "/healthz")
        assertNotFound("GET", "/v2/providers/p/vehicles/v1")
        assertNotFound("GET", "/v1/projects/p/vehicles/v1")
        assertNotFound("GET", "/v1/providers/p/widgets/w1")
        assertNotFound("GET", "/v1/providers/p/Vehicles/v1")
        assertNotFound("GET", "/v1/providers/p")
        assertNotFound("GET", "/v1/providers")
        assertNotFound("GET", "")
        assertNotFound("OPTIONS", "*")
    }

    func testAbsoluteFormTargetIsNotFound() {
        assertNotFound("GET", "https://fleetengine.googleapis.com/v1/providers/p/vehicles/v1")
    }

    func testEmptyProviderSegmentIsNotFound() {
        assertNotFound("GET", "/v1/providers//vehicles/x")
    }

    func testEmptySegmentsAreNotFound() {
        assertNotFound("GET", "//v1/providers/p/vehicles/x")
        assertNotFound("GET", "/v1//providers/p/vehicles/x")
        assertNotFound("GET", "/v1/providers/p//vehicles/x")
        assertNotFound("GET", "/v1/providers/p/vehicles//x")
    }

    func testTrailingSlashIsNotFound() {
        assertNotFound("GET", "\(base)/vehicles/v1/")
        assertNotFound("GET", "\(base)/vehicles/")
        assertNotFound("POST", "\(base)/vehicles/?vehicleId=v1")
    }

    func testDotSegmentsAreNotFound() {
        assertNotFound("GET", "\(base)/vehicles/.")
        assertNotFound("GET", "\(base)/vehicles/..")
        assertNotFound("GET", "\(base)/vehicles/%2E%2E")
        assertNotFound("GET", "\(base)/vehicles/.%2e")
        assertNotFound("GET", "/v1/providers/../vehicles/v1")
        assertNotFound("GET", "/v1/providers/./vehicles")
    }

    func testExtraSegmentsAreNotFound() {
        assertNotFound("GET", "\(base)/vehicles/v1/trips")
        assertNotFound("GET", "\(base)/vehicles/v1/trips/t1/x/y/z")
    }

    func testLiteralSegmentsAreComparedAfterDecoding() {
        assertEntity("GET", "/v%31/provider%73/my-project/vehicle%73/v1", vehicle("v1"))
    }

    func testUnknownRouteIsNotFoundEvenWithAnInvalidId() {
        // Route and method are checked first: an unknown call is a 404, whatever its ids.
        assertNotFound("POST", "\(base)/vehicles/a%2Fb")
        assertNotFound("GET", "/v1/providers/a%2Fb/widgets")
    }

    // MARK: - Messages

    func testMessagesDoNotEchoHugeInput() {
        let hugeID = String(repeating: "x", count: 10_000)
        let invalid = assertInvalid("GET", "\(base)/vehicles/\(hugeID)")
        XCTAssertLessThan(invalid.unicodeScalars.count, 200, invalid)
        XCTAssertTrue(invalid.contains("longer than 64 characters"), invalid)

        guard case .failure(let failure) = RESTRoute.classify(method: "GET", target: "/\(hugeID)") else {
            return XCTFail("expected a failure")
        }
        XCTAssertLessThan(failure.message.unicodeScalars.count, 200, failure.message)
        XCTAssertFalse(failure.message.contains(String(repeating: "x", count: 65)), failure.message)
    }

    func testMessagesCapEchoedTextAt64Characters() {
        XCTAssertEqual(RESTRoute.capped(String(repeating: "a", count: 64)), String(repeating: "a", count: 64))
        let cut = RESTRoute.capped(String(repeating: "a", count: 65))
        XCTAssertEqual(cut.unicodeScalars.count, 64)
        XCTAssertTrue(cut.hasSuffix("\u{2026}"))
    }

    func testMessagesDoNotCarryRawControlCharacters() {
        let message = assertInvalid("GET", "\(base)/vehicles/a\u{1B}[31mb")
        XCTAssertFalse(message.unicodeScalars.contains { $0.value < 0x20 }, message)
    }

    // MARK: - Hardening (issue 8)

    func testSnakeCaseIdParameterIsTheSameFieldSoBothAreAmbiguous() {
        assertInvalid("POST", "\(base)/vehicles?vehicleId=a&vehicle_id=b")
        assertInvalid("POST", "\(base)/trips?trip_id=b&tripId=a")
        assertInvalid("POST", "\(base)/deliveryVehicles?deliveryVehicleId=a&delivery_vehicle_id=b")
        assertInvalid("POST", "\(base)/tasks?taskId=a&task%5Fid=b")
        assertInvalid("POST", "\(base)/vehicles?vehicle_id=a&vehicle_id=a")
        assertEntity("POST", "\(base)/vehicles?vehicle_id=v1", EntityKey(provider: "my-project", type: .vehicle, id: "v1"))
    }

    func testClientCredentialQueryParametersAreRefusedAnywhere() {
        for query in ["access_token=x", "a=1&access_token=x", "key=x", "b=2&key=&c=3", "%6Bey=x", "access%5Ftoken=x", "ACCESS_TOKEN=x", "Key=x", "access+token=x".replacingOccurrences(of: "+", with: "_")] {
            let message = assertInvalid("GET", "\(base)/vehicles/v1?\(query)")
            XCTAssertTrue(message.contains("credential"), message)
            assertInvalid("GET", "\(base)/vehicles?\(query)")
            assertInvalid("POST", "\(base)/vehicles?vehicleId=v1&\(query)")
        }
        assertEntity("GET", "\(base)/vehicles/v1?keys=x&monkey=y&access_tokens=z", EntityKey(provider: "my-project", type: .vehicle, id: "v1"))
    }

    func testMethodOverrideHeadersAreRecognisedInAnyCase() {
        for name in ["X-HTTP-Method-Override", "x-http-method", "X-Method-Override"] {
            let failure = headerRefusal(HTTPHeaders([(name: "Host", value: "h"), (name: name, value: "DELETE")]))
            XCTAssertEqual(failure?.httpStatus, 400, name)
            XCTAssertEqual(failure?.statusName, "INVALID_ARGUMENT", name)
        }
        XCTAssertNil(headerRefusal(HTTPHeaders([(name: "X-HTTP-Methods", value: "x"), (name: "X-Goog-Api-Keys", value: "x")])))
    }

    func testAClientAPIKeyHeaderIsRefused() {
        let failure = headerRefusal(HTTPHeaders([(name: "x-goog-api-key", value: "AIza")]))
        XCTAssertEqual(failure?.httpStatus, 400)
        XCTAssertFalse(failure?.message.contains("AIza") ?? true, "the credential is not echoed")
    }

    func testHeaderRefusalOverNameBytesMatchesTheStringCheck() {
        for name in ["X-HTTP-Method-Override", "x-http-method", "X-METHOD-OVERRIDE", "X-Goog-Api-Key", "x-goog-api-key",
                     "x-http-methods", "x-goog-api-ke", "content-type", "", "x-http-method-overrid\u{e9}"] {
            let fromBytes = name.withByteView { RESTRoute.headerRefusal(name: $0) }
            let fromString = headerRefusal(HTTPHeaders([(name: name, value: "v")]))
            XCTAssertEqual(fromBytes?.message, fromString?.message, name)
        }
        XCTAssertNotNil("X-Http-Method".withByteView { RESTRoute.headerRefusal(name: $0) })
        XCTAssertNil("x-http-metho".withByteView { RESTRoute.headerRefusal(name: $0) })
    }

    func testHeaderRefusalIsTheSameOverAnHTTP2HeaderList() {
        var refused = H2HeaderList()
        refused.append(name: ":path", value: "/v1/providers/p/vehicles/v1")
        refused.append(name: "x-goog-api-key", value: "AIza")
        refused.append(name: "x-http-method-override", value: "DELETE")
        let failure = RESTRoute.headerRefusal(fields: refused)
        // The first refused field is the one named, as over HTTP/1.1.
        XCTAssertEqual(failure?.message, headerRefusal(HTTPHeaders([(name: "x-goog-api-key", value: "AIza"),
                                                                    (name: "x-http-method-override", value: "DELETE")]))?.message)
        XCTAssertTrue(failure?.message.contains("credential") ?? false)
        XCTAssertFalse(failure?.message.contains("AIza") ?? true, "the credential is not echoed")
        var accepted = H2HeaderList()
        accepted.append(name: "content-type", value: "application/json")
        accepted.append(name: "x-http-methods", value: "x")
        XCTAssertNil(RESTRoute.headerRefusal(fields: accepted))
        XCTAssertNil(RESTRoute.headerRefusal(fields: H2HeaderList()))
    }

    /// The check over a parsed HTTP/1.1 head holding `headers`.
    private func headerRefusal(_ headers: HTTPHeaders) -> ProxyFailure? {
        RESTRoute.headerRefusal(fields: HeadFields(headers))
    }
}

