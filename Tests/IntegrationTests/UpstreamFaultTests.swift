@testable import FleetTokenProxy
import Foundation
import XCTest

/// An upstream HTTP/2 connection that meets a fault (issue 25: a malformed frame, a flood, a
/// GOAWAY, a reset storm, a TLS alert, a close mid-answer) is torn down at once (RFC 9113
/// §5.4.1: GOAWAY, then close) and the sidecar goes on (docs/CONTRACT.md §5, §6, §7): the call
/// in flight gets its answer promptly — 502 / UNAVAILABLE, or a resend where the replay rule
/// allows, or a cut once its answer had begun — a replacement connection is dialled before the
/// next call needs it, the next call succeeds on it, and no descriptor stays behind. The
/// default flow: TLS with ALPN `h2`, REST from an HTTP/1.1 client and gRPC from an h2c client
/// on the same connections. Each test prints one `FAULT` line per call it makes meet the fault
/// (the figures of the report: the answer, its time, the time to the first good call after
/// the fault and the calls that failed before it).
final class UpstreamFaultTests: ScriptedUpstreamTestCase {
    // MARK: The faults, each met by one call

    func testAHeadersFrameOverTheFrameSizeRESTPostFailsAndTheNextCallGoesOnAFreshConnection() throws {
        try expectRecovery(from: .oversizedHeaders, .restPOST, answered: .status(502))
    }

    func testAHeadersFrameOverTheFrameSizeRESTGetIsSentAgainAndTheNextCallGoesOnAFreshConnection() throws {
        try expectRecovery(from: .oversizedHeaders, .restGET, answered: .status(200))
    }

    func testAHeadersFrameOverTheFrameSizeGRPCCallFailsAndTheNextCallGoesOnAFreshConnection() throws {
        try expectRecovery(from: .oversizedHeaders, .grpc, answered: .grpcStatus(14))
    }

    func testAHeaderBlockThatDoesNotDecodeRESTPostFailsAndTheNextCallGoesOnAFreshConnection() throws {
        try expectRecovery(from: .undecodableHeaderBlock, .restPOST, answered: .status(502))
    }

    func testAHeaderBlockThatDoesNotDecodeGRPCCallFailsAndTheNextCallGoesOnAFreshConnection() throws {
        try expectRecovery(from: .undecodableHeaderBlock, .grpc, answered: .grpcStatus(14))
    }

    func testDataOnStreamZeroRESTPostFailsAndTheNextCallGoesOnAFreshConnection() throws {
        try expectRecovery(from: .dataOnStreamZero, .restPOST, answered: .status(502))
    }

    func testDataOnStreamZeroGRPCCallFailsAndTheNextCallGoesOnAFreshConnection() throws {
        try expectRecovery(from: .dataOnStreamZero, .grpc, answered: .grpcStatus(14))
    }

    func testAWindowUpdateOverflowRESTPostFailsAndTheNextCallGoesOnAFreshConnection() throws {
        try expectRecovery(from: .windowUpdateOverflow, .restPOST, answered: .status(502))
    }

    func testAWindowUpdateOverflowGRPCCallFailsAndTheNextCallGoesOnAFreshConnection() throws {
        try expectRecovery(from: .windowUpdateOverflow, .grpc, answered: .grpcStatus(14))
    }

    func testASettingsFloodRESTPostFailsAndTheNextCallGoesOnAFreshConnection() throws {
        try expectRecovery(from: .settingsFlood, .restPOST, answered: .status(502))
    }

    func testASettingsFloodGRPCCallFailsAndTheNextCallGoesOnAFreshConnection() throws {
        try expectRecovery(from: .settingsFlood, .grpc, answered: .grpcStatus(14))
    }

    /// The stream was not processed (RFC 9113 §6.8): sent again on a fresh connection, whatever
    /// the method, gRPC too; the connection the upstream left open is closed by the sidecar.
    func testAGoAwayWithoutTheStreamRESTPostIsSentAgainAndTheNextCallGoesOnAFreshConnection() throws {
        try expectRecovery(from: .goAwayBeforeStream, .restPOST, answered: .status(200))
    }

    func testAGoAwayWithoutTheStreamGRPCCallIsSentAgainAndTheNextCallGoesOnAFreshConnection() throws {
        try expectRecovery(from: .goAwayBeforeStream, .grpc, answered: .grpcStatus(0))
    }

    /// A GOAWAY with an error that names the stream: the upstream may have acted on it and will
    /// not answer; an idempotent REST call goes again (docs/CONTRACT.md §7), the rest fail at once.
    func testAGoAwayWithTheStreamInFlightRESTPostFailsAndTheNextCallGoesOnAFreshConnection() throws {
        try expectRecovery(from: .goAwayWithStreamInFlight, .restPOST, answered: .status(502))
    }

    func testAGoAwayWithTheStreamInFlightRESTGetIsSentAgainAndTheNextCallGoesOnAFreshConnection() throws {
        try expectRecovery(from: .goAwayWithStreamInFlight, .restGET, answered: .status(200))
    }

    func testAGoAwayWithTheStreamInFlightGRPCCallFailsAndTheNextCallGoesOnAFreshConnection() throws {
        try expectRecovery(from: .goAwayWithStreamInFlight, .grpc, answered: .grpcStatus(14))
    }

    /// A reset stream is never sent again (docs/CONTRACT.md §7); the RST_STREAM on a stream never
    /// opened that ends the storm is a connection error.
    func testAResetStormRESTPostFailsAndTheNextCallGoesOnAFreshConnection() throws {
        try expectRecovery(from: .resetStorm, .restPOST, answered: .status(502))
    }

    func testAResetStormGRPCCallFailsAndTheNextCallGoesOnAFreshConnection() throws {
        try expectRecovery(from: .resetStorm, .grpc, answered: .grpcStatus(14))
    }

    func testATLSAlertMidStreamRESTPostFailsAndTheNextCallGoesOnAFreshConnection() throws {
        try expectRecovery(from: .tlsAlert, .restPOST, answered: .status(502))
    }

    func testATLSAlertMidStreamRESTGetIsSentAgainAndTheNextCallGoesOnAFreshConnection() throws {
        try expectRecovery(from: .tlsAlert, .restGET, answered: .status(200))
    }

    func testATLSAlertMidStreamGRPCCallFailsAndTheNextCallGoesOnAFreshConnection() throws {
        try expectRecovery(from: .tlsAlert, .grpc, answered: .grpcStatus(14))
    }

    /// Once part of the answer reached the client, the failure can only cut it
    /// (docs/CONTRACT.md §5).
    func testAnAbruptCloseMidAnswerRESTPostIsCutAndTheNextCallGoesOnAFreshConnection() throws {
        try expectRecovery(from: .abruptCloseMidAnswer, .restPOST, answered: .cut)
    }

    func testAnAbruptCloseMidAnswerGRPCCallIsCutAndTheNextCallGoesOnAFreshConnection() throws {
        try expectRecovery(from: .abruptCloseMidAnswer, .grpc, answered: .cut)
    }

    /// An upstream that breaks every connection breaks one per call: every call still gets its
    /// answer at once, and the log says so once an interval, not once a call.
    func testAnUpstreamThatBreaksEveryConnectionIsLoggedOnceAnInterval() throws {
        try start(.dataOnStreamZero)
        for n in 0..<10 {
            let (seen, took) = try make(.restPOST, id: "fault-storm-\(n)")
            XCTAssertEqual(seen, .status(502))
            XCTAssertLessThan(took, 3)
        }
        XCTAssertGreaterThanOrEqual(upstream.connectionCount, 10, "a connection a call")
        XCTAssertTrue(sidecar.waitForLog("upstream HTTP/2 connection error", timeout: 2))
        let lines = sidecar.log.split(separator: "\n").filter { $0.contains("upstream HTTP/2 connection error") }
        XCTAssertEqual(lines.count, 1, "\(lines)")
    }

    // MARK: How a fault is met

    private enum Call: String {
        case restPOST = "REST POST", restGET = "REST GET", grpc = "gRPC"
    }

    /// What the client saw.
    private enum Seen: Equatable, CustomStringConvertible {
        case status(Int)
        case grpcStatus(Int)
        /// The connection (HTTP/1.1) or the stream (HTTP/2) ended before the answer did.
        case cut
        /// Nothing within the client's patience.
        case nothing

        var description: String {
            switch self {
            case .status(let status): return "\(status)"
            case .grpcStatus(let status): return "grpc-status \(status)"
            case .cut: return "cut"
            case .nothing: return "no answer"
            }
        }
    }

    private var calls = 0

    /// A TLS upstream that commits `fault` on the first call about an entity whose id starts
    /// with `fault-` and answers the others, the sidecar in front of it (the default flow,
    /// `auto` to `https://`), once its warm connection is up.
    private func start(_ fault: H2Fault) throws {
        let certificate = try selfSignedCertificate(in: dir)
        let seen = Sightings()
        upstream = try ScriptedH2Upstream(tls: certificate) { request, _ in
            // A resend of the call (same entity) is answered.
            let entity = request.isGRPC ? String(decoding: request.body.dropFirst(7), as: UTF8.self) : request.path
            if entity.contains("vehicles/fault-") && seen.first(entity) { return .fault(fault) }
            return request.isGRPC ? .grpcTrailersOnly(status: 0) : .ok()
        }
        sidecar = try SidecarProcess(["--upstream", "https://\(upstream.address)", "--upstream-ca-file", certificate.cert,
                                      "--provider-url", standIns.providerTemplate])
        XCTAssertTrue(eventually(within: 5) { self.upstream.connectionCount == 1 }, "the warm connection")
        // Warm the token path too, so the timings below are the upstream's alone.
        XCTAssertEqual(try make(.restGET, id: "warm").seen, .status(200))
        XCTAssertEqual(try make(.grpc, id: "warm").seen, .grpcStatus(0))
    }

    /// Makes one call of `kind` meet `fault` and expects `answered` within 3 s (not the 60 s
    /// answer bound); a replacement connection dialled without a call; then calls until one
    /// succeeds, which must be the first, on a connection opened after the fault; the broken
    /// connection closed, and as many descriptors open as before.
    private func expectRecovery(from fault: H2Fault, _ kind: Call, answered: Seen, file: StaticString = #filePath, line: UInt = #line) throws {
        try start(fault)
        let descriptorsBefore = sidecar.descriptorCount
        // A connection lost younger than a second is not replaced before a call needs one
        // (`WarmConnectionRule`): the one the fault meets is older.
        Thread.sleep(forTimeInterval: WarmConnectionRule.minimumAge + 0.1)
        let connectionsBefore = upstream.connectionCount
        let started = Date()
        let (seen, took) = try make(kind, id: "fault-\(calls)")
        XCTAssertEqual(seen, answered, "\(fault), \(kind.rawValue): the call in flight", file: file, line: line)
        XCTAssertLessThan(took, 3, "\(fault), \(kind.rawValue): answered promptly, not at the answer bound", file: file, line: line)
        let replaced = eventually(within: 2) { self.upstream.connectionCount > connectionsBefore }
        XCTAssertTrue(replaced, "\(fault), \(kind.rawValue): a replacement dialled before the next call", file: file, line: line)
        // Calls until one succeeds (the first, once fixed), a tenth of a second apart.
        var failed = seen == answered && (answered == .status(200) || answered == .grpcStatus(0)) ? 0 : 1
        var firstGood: Double?
        var probes = 0
        while firstGood == nil && Date().timeIntervalSince(started) < 15 {
            probes += 1
            let (probe, _) = try make(kind, id: "after-\(calls)")
            if probe == .status(200) || probe == .grpcStatus(0) {
                firstGood = Date().timeIntervalSince(started)
            } else {
                failed += 1
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
        let good = firstGood.map { String(format: "%.2f s", $0) } ?? "none within 15 s"
        print("FAULT \(fault) | \(kind.rawValue) | in flight: \(seen) in \(String(format: "%.2f", took)) s | first good call after \(good) | calls failed \(failed)")
        XCTAssertEqual(probes, 1, "\(fault), \(kind.rawValue): the first call after the fault succeeds", file: file, line: line)
        XCTAssertNotNil(firstGood, file: file, line: line)
        if let last = upstream.requests.last {
            XCTAssertGreaterThan(last.connection, connectionsBefore, "served on a fresh connection", file: file, line: line)
        }
        let met = upstream.requests.first { $0.path.contains("/fault-") || String(decoding: $0.body, as: UTF8.self).contains("/fault-") }
        let broken = try XCTUnwrap(met?.connection, "the call reached the upstream", file: file, line: line)
        XCTAssertTrue(eventually(within: 2) { !self.upstream.isOpen(connection: broken) },
                      "\(fault), \(kind.rawValue): the sidecar closed the broken connection", file: file, line: line)
        XCTAssertEqual(upstream.openConnectionCount, 1, "\(fault), \(kind.rawValue): one connection left", file: file, line: line)
        if fault.isConnectionError {
            // The line reaches the test through a pipe read on another thread: waited for.
            XCTAssertTrue(sidecar.waitForLog("upstream HTTP/2 connection error", timeout: 2), "\(fault): said in the log", file: file, line: line)
        }
        XCTAssertFalse(sidecar.log.contains("Bearer"), "no token in the log", file: file, line: line)
        XCTAssertTrue(eventually(within: 3) { self.sidecar.descriptorCount == descriptorsBefore },
                      "\(sidecar.descriptorCount) descriptors open, \(descriptorsBefore) before the fault", file: file, line: line)
    }

    /// One call of `kind` about vehicle `id`, on a connection of its own: what the client saw,
    /// and how long it took.
    private func make(_ kind: Call, id: String) throws -> (seen: Seen, took: Double) {
        calls += 1
        let started = Date()
        let seen: Seen
        switch kind {
        case .restPOST, .restGET:
            let client = try RawClient(address: sidecar.address)
            let body = Array(#"{"lastLocation":{}}"#.utf8)
            if kind == .restPOST {
                client.send(Array("POST /v1/providers/p/vehicles/\(id):updateLocation HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body)
            } else {
                client.send("GET /v1/providers/p/vehicles/\(id) HTTP/1.1\r\nHost: x\r\n\r\n")
            }
            if let response = client.readResponse(timeout: 5) {
                seen = .status(response.status)
            } else {
                seen = client.closedByPeer ? .cut : .nothing
            }
        case .grpc:
            seen = try grpcGetVehicle(id)
        }
        return (seen, Date().timeIntervalSince(started))
    }

    /// `VehicleService/GetVehicle` for `providers/p/vehicles/<id>` from curl over h2c, as a
    /// gRPC client's insecure channel sends it: the `grpc-status` it got (head or trailers).
    private func grpcGetVehicle(_ id: String) throws -> Seen {
        let name = Array("providers/p/vehicles/\(id)".utf8)
        let message = [0x1a, UInt8(name.count)] + name // field 3, length-delimited
        let frame = [0, 0, 0, 0, UInt8(message.count)] + message
        let file = dir.appendingPathComponent("grpc-\(id)").path
        try Data(frame).write(to: URL(fileURLWithPath: file))
        let result = try curl(["--http2-prior-knowledge", "--max-time", "5", "-o", "/dev/null", "-D", "-",
                               "-H", "content-type: application/grpc", "-H", "te: trailers", "--data-binary", "@\(file)",
                               sidecar.baseURL + "/maps.fleetengine.v1.VehicleService/GetVehicle"])
        if result.status == 28 { return .nothing }
        guard result.status == 0 else { return .cut }
        let statuses = result.stdout.split(whereSeparator: \.isNewline).compactMap { line -> Int? in
            guard line.lowercased().hasPrefix("grpc-status:") else { return nil }
            return Int(line.dropFirst("grpc-status:".count).trimmingCharacters(in: .whitespaces))
        }
        return statuses.last.map { .grpcStatus($0) } ?? .cut
    }
}
