@testable import FleetTokenProxy
@testable import FleetTokenProxyStandIns
import Foundation
import XCTest

/// The sidecar binary between curl and the loopback stand-ins, over real sockets.
final class RESTProxyTests: SidecarTestCase {
    /// status, body, response headers of one curl call through the sidecar.
    func call(_ method: String, _ path: String, body: String? = nil, headers: [String] = []) throws -> (status: Int, body: String, headers: String) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let bodyFile = dir.appendingPathComponent("body").path
        let headerFile = dir.appendingPathComponent("headers").path
        var args = ["-X", method, "-o", bodyFile, "-D", headerFile, "-w", "%{http_code}"]
        for h in headers { args += ["-H", h] }
        if let body {
            let file = dir.appendingPathComponent("request").path
            try body.write(toFile: file, atomically: true, encoding: .utf8)
            args += ["--data-binary", "@" + file, "-H", "Content-Type: application/json"]
        }
        args.append(sidecar.baseURL + path)
        let result = try curl(args)
        XCTAssertEqual(result.status, 0, "curl failed: \(result.stderr)")
        return (Int(result.stdout) ?? -1,
                (try? String(contentsOfFile: bodyFile, encoding: .utf8)) ?? "",
                (try? String(contentsOfFile: headerFile, encoding: .utf8)) ?? "")
    }

    func testCurlUpdatesAVehicleWithTheVehiclesOwnToken() throws {
        try startSidecar()
        let body = #"{"name":"providers/p1/vehicles/v1","lastLocation":{"location":{"latitude":1}}}"#
        let answer = try call("PUT", "/v1/providers/p1/vehicles/v1?updateMask=last_location", body: body,
                              headers: ["Authorization: Bearer client-supplied-must-be-replaced"])
        XCTAssertEqual(answer.status, 200, answer.body)
        XCTAssertTrue(answer.body.contains("providers/p1/vehicles/v1"), answer.body)
        XCTAssertTrue(answer.headers.lowercased().contains("x-standin-request-bytes: \(body.utf8.count)"), answer.headers)
        let (accepted, rejected, auths) = standIns.sync { (self.standIns.fleetEngine.statistics.accepted, self.standIns.fleetEngine.statistics.rejected, self.standIns.seenAuthorizations) }
        XCTAssertEqual(accepted, 1)
        XCTAssertEqual(rejected, 0)
        XCTAssertFalse(auths.contains { $0.contains("client-supplied") })
    }

    func testEveryRESTEntityKindGetsATokenForItsOwnEntity() throws {
        try startSidecar()
        let calls: [(String, String, String?)] = [
            ("GET", "/v1/providers/p1/vehicles/v%20one", nil),
            ("POST", "/v1/providers/p1/vehicles?vehicleId=v2", "{}"),
            ("POST", "/v1/providers/p1/vehicles/v3:updateLocation", "{}"),
            ("GET", "/v1/providers/p1/trips/t1", nil),
            ("POST", "/v1/providers/p1/trips?tripId=t2", "{}"),
            ("PATCH", "/v1/providers/p1/deliveryVehicles/dv1?updateMask=x", "{}"),
            ("POST", "/v1/providers/p1/deliveryVehicles?deliveryVehicleId=dv2", "{}"),
            ("GET", "/v1/providers/p1/tasks/task1", nil),
            ("POST", "/v1/providers/p1/tasks?taskId=task2", "{}"),
            ("GET", "/v1/providers/p1/taskTrackingInfo/track1", nil),
            ("GET", "/v1/providers/p1/vehicles", nil),
            ("POST", "/v1/providers/p1/vehicles:search", "{}"),
            ("POST", "/v1/providers/p1/tasks:batchCreate", "{}"),
        ]
        for (method, path, body) in calls {
            let answer = try call(method, path, body: body)
            XCTAssertEqual(answer.status, 200, "\(method) \(path): \(answer.body)")
        }
        let stats = standIns.sync { self.standIns.fleetEngine.statistics }
        XCTAssertEqual(stats.accepted, calls.count)
        XCTAssertEqual(stats.rejected, 0)
        let fetched = standIns.sync { self.standIns.provider.fetchesByEntity }
        XCTAssertEqual(fetched[EntityKey(provider: "p1", type: .vehicle, id: "v one")], 1)
        XCTAssertEqual(fetched[EntityKey.fleet(provider: "p1")], 1, "three fleet calls share one wildcard token")
    }

    func testOneMebibyteResponseArrivesIntact() throws {
        try startSidecar()
        let answer = try call("GET", "/v1/providers/p1/vehicles/big-1")
        XCTAssertEqual(answer.status, 200)
        XCTAssertEqual(answer.body.utf8.count, StandInFleetEngine.bigResponseSize)
    }

    /// Two answers larger than the kernel's socket buffers on one keep-alive connection, to a
    /// client that reads each only after a pause: reading from the upstream pauses (the
    /// client's output past its high-water mark) and resumes for each, the second on the
    /// upstream exchange the first one's call left (`H1UpstreamExchange.reusable`).
    func testAClientThatReadsLateGetsTwoLargeAnswersOnOneConnection() throws {
        let size = 8 << 20
        let answer = Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(size)\r\n\r\n".utf8)
            + [UInt8](repeating: 0x78, count: size)
        let upstream = try RecordingUpstream(reply: { _, _ in .bytes(answer) })
        defer { upstream.stop() }
        sidecar = try SidecarProcess(["--upstream", "http://\(upstream.address)", "--provider-url", standIns.providerTemplate])
        // A small window: what the client leaves unread queues in the sidecar, not the kernel.
        let client = try RawClient(address: sidecar.address, receiveBuffer: 4096)
        for round in 1...2 {
            client.send(Array("GET /v1/providers/p1/vehicles/big-late HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            Thread.sleep(forTimeInterval: 0.5)
            let answer = client.readResponse(timeout: 20)
            XCTAssertEqual(answer?.status, 200, "answer \(round)")
            XCTAssertEqual(answer?.body.utf8.count, size, "answer \(round)")
        }
    }

    func testLargeRequestBodyIsRelayedWhole() throws {
        try startSidecar()
        let payload = "{\"pad\":\"" + String(repeating: "x", count: 300_000) + "\"}"
        let answer = try call("PUT", "/v1/providers/p1/vehicles/v1", body: payload)
        XCTAssertEqual(answer.status, 200, answer.body)
        XCTAssertTrue(answer.headers.lowercased().contains("x-standin-request-bytes: \(payload.utf8.count)"), answer.headers)
    }

    func testConcurrentColdCallsFetchOneTokenPerEntity() throws {
        try startSidecar()
        // The provider answers slowly, so every call for an entity arrives while its fetch is in flight.
        standIns.sync { self.standIns.provider.behaviour = .delay(0.3) }
        var urls: [String] = []
        for round in 0..<10 {
            for v in 0..<20 { urls.append("\(sidecar.baseURL)/v1/providers/p1/vehicles/cold-\(v)?r=\(round)") }
        }
        let result = try curl(["--parallel", "--parallel-immediate", "--parallel-max", "200", "-w", "%{http_code}\n"] + urls.flatMap { ["-o", "/dev/null", $0] })
        let codes = result.stdout.split(separator: "\n")
        XCTAssertEqual(codes.count, 200, result.stderr)
        XCTAssertTrue(codes.allSatisfy { $0 == "200" }, result.stdout)
        let fetched = standIns.sync { self.standIns.provider.fetchesByEntity }
        XCTAssertEqual(fetched.count, 20)
        for v in 0..<20 {
            XCTAssertEqual(fetched[EntityKey(provider: "p1", type: .vehicle, id: "cold-\(v)")], 1, "vehicle cold-\(v)")
        }
    }

    func testWarmCacheServesRepeatedCallsWithoutTheProvider() throws {
        try startSidecar()
        for _ in 0..<5 { XCTAssertEqual(try call("GET", "/v1/providers/p1/trips/t9").status, 200) }
        XCTAssertEqual(standIns.sync { self.standIns.provider.totalFetches }, 1)
    }

    func testNonFleetEnginePathIs404AndNeverForwarded() throws {
        try startSidecar()
        for path in ["/", "/v1/providers/p1/secrets/x", "/v1/providers/p1//vehicles/v1", "/v2/providers/p1/vehicles/v1"] {
            let answer = try call("GET", path)
            XCTAssertEqual(answer.status, 404, path)
            XCTAssertTrue(answer.body.contains("\"status\":\"NOT_FOUND\""), answer.body)
        }
        XCTAssertEqual(standIns.sync { self.standIns.seenRequests.count }, 0)
        XCTAssertEqual(standIns.sync { self.standIns.provider.totalFetches }, 0)
    }

    func testInvalidEntityIdIs400InvalidArgument() throws {
        try startSidecar()
        let long = String(repeating: "a", count: 65)
        for path in ["/v1/providers/p1/vehicles/\(long)", "/v1/providers/p1/vehicles/a%2Fb", "/v1/providers/p1/vehicles?vehicleId="] {
            let method = path.contains("?") ? "POST" : "GET"
            let answer = try call(method, path, body: method == "POST" ? "{}" : nil)
            XCTAssertEqual(answer.status, 400, path)
            XCTAssertTrue(answer.body.contains("INVALID_ARGUMENT"), answer.body)
        }
        XCTAssertEqual(standIns.sync { self.standIns.seenRequests.count }, 0)
    }

    func testProviderFailuresBecomeTheErrorsOfSpecSection5() throws {
        try startSidecar(["--provider-timeout", "1"])
        let cases: [(StandInProvider.Behaviour, Int, String)] = [
            (.status(403), 403, "PERMISSION_DENIED"),
            (.status(404), 403, "PERMISSION_DENIED"),
            (.status(500), 503, "UNAVAILABLE"),
            (.status(503), 503, "UNAVAILABLE"),
            (.delay(3), 503, "UNAVAILABLE"),
            (.garbage, 502, "UNAVAILABLE"),
            (.noToken, 502, "UNAVAILABLE"),
            (.noExpiry, 502, "UNAVAILABLE"),
            (.expired, 502, "UNAVAILABLE"),
        ]
        for (i, (behaviour, status, name)) in cases.enumerated() {
            standIns.sync { self.standIns.provider.behaviour = behaviour }
            let answer = try call("GET", "/v1/providers/p1/vehicles/failing-\(i)")
            XCTAssertEqual(answer.status, status, "\(behaviour): \(answer.body)")
            XCTAssertTrue(answer.body.contains("\"status\":\"\(name)\""), "\(behaviour): \(answer.body)")
            XCTAssertTrue(answer.body.contains("\"message\":\""), answer.body)
        }
        XCTAssertEqual(standIns.sync { self.standIns.seenRequests.count }, 0, "nothing is forwarded without a valid token")
        // A failed fetch is not cached: the provider recovers, the same entity works.
        standIns.sync { self.standIns.provider.behaviour = .normal }
        XCTAssertEqual(try call("GET", "/v1/providers/p1/vehicles/failing-0").status, 200)
    }

    func testUnreachableProviderIs503() throws {
        sidecar = try SidecarProcess([
            "--upstream", "http://\(standIns.fleetEngineAddress)",
            "--provider-url", "http://127.0.0.1:1/token/{type}/{id}",
        ])
        let answer = try call("GET", "/v1/providers/p1/vehicles/v1")
        XCTAssertEqual(answer.status, 503)
        XCTAssertTrue(answer.body.contains("UNAVAILABLE"))
    }

    func testUnreachableFleetEngineIs502() throws {
        sidecar = try SidecarProcess(["--upstream", "http://127.0.0.1:1", "--provider-url", standIns.providerTemplate])
        let answer = try call("GET", "/v1/providers/p1/vehicles/v1")
        XCTAssertEqual(answer.status, 502)
        XCTAssertTrue(answer.body.contains("UNAVAILABLE"))
    }

    func testProviderGetsStaticHeadersAndRefusesWithoutThem() throws {
        standIns.sync { self.standIns.provider.requiredHeader = (name: "X-Backend-Key", value: "k-123") }
        try startSidecar(["--provider-header", "X-Backend-Key: k-123"])
        XCTAssertEqual(try call("GET", "/v1/providers/p1/vehicles/v1").status, 200)
        sidecar.stop()
        try startSidecar(["--provider-header", "X-Backend-Key: wrong"])
        XCTAssertEqual(try call("GET", "/v1/providers/p1/vehicles/v2").status, 403)
    }

    func testHopByHopHeadersAreDroppedAndHostIsTheUpstreams() throws {
        try startSidecar()
        _ = try call("GET", "/v1/providers/p1/vehicles/v1", headers: ["Connection: keep-alive, X-Hop", "X-Hop: secret", "X-End-To-End: kept", "Proxy-Authorization: x"])
        let request = try XCTUnwrap(standIns.sync { self.standIns.seenRequests.last })
        XCTAssertNil(request.headers["x-hop"])
        XCTAssertNil(request.headers["proxy-authorization"])
        XCTAssertEqual(request.headers["x-end-to-end"], "kept")
        XCTAssertEqual(request.headers["host"], standIns.fleetEngineAddress)
    }

    func testNoTokenAppearsInTheLogEvenAtTrace() throws {
        try startSidecar(["--log-level", "trace"])
        standIns.sync { self.standIns.provider.behaviour = .normal }
        for i in 0..<5 { _ = try call("GET", "/v1/providers/p1/vehicles/log-\(i)") }
        standIns.sync { self.standIns.provider.behaviour = .wrongAudience }
        _ = try call("GET", "/v1/providers/p1/vehicles/log-wrong")
        sidecar.stop()
        let tokens = standIns.sync { self.standIns.seenAuthorizations }.map { $0.replacingOccurrences(of: "Bearer ", with: "") }
        XCTAssertFalse(tokens.isEmpty)
        let log = sidecar.log
        XCTAssertFalse(log.isEmpty)
        for token in tokens {
            XCTAssertFalse(log.contains(token), "a token is in the log")
            // Not even its signature part.
            if let signature = token.split(separator: ".").last { XCTAssertFalse(log.contains(signature)) }
        }
    }

    func testOversizedHeaderIsRefusedWith413() throws {
        try startSidecar()
        let answer = try call("GET", "/v1/providers/p1/vehicles/v1", headers: ["X-Big: " + String(repeating: "b", count: 40_000)])
        XCTAssertEqual(answer.status, 413)
    }

    func testKeepAliveCarriesSeveralCallsOnOneClientConnection() throws {
        try startSidecar()
        let url = sidecar.baseURL + "/v1/providers/p1/vehicles/ka"
        let result = try curl(["-v", "-o", "/dev/null", "-o", "/dev/null", "-o", "/dev/null", url, url, url])
        XCTAssertEqual(result.status, 0)
        XCTAssertTrue(result.stderr.contains("Re-using existing connection"), result.stderr)
        XCTAssertEqual(standIns.sync { self.standIns.fleetEngine.statistics.accepted }, 3)
    }

    func testSigtermExitsZero() throws {
        try startSidecar()
        XCTAssertEqual(sidecar.stop(), 0)
        sidecar = nil
    }
}
