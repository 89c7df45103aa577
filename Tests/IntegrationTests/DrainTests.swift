@testable import FleetTokenProxy
import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// SIGTERM/SIGINT: stop accepting, report not ready, let calls in flight finish within
/// `--drain-timeout`, exit 0.
final class DrainTests: XCTestCase {
    var standIns: StandInHost!

    override func setUpWithError() throws {
        standIns = try StandInHost()
    }

    override func tearDown() {
        standIns?.stop()
    }

    /// A call whose token takes `seconds` to come: it is in flight from the moment the
    /// provider has the request.
    func startSlowCall(_ sidecar: SidecarProcess, id: String, seconds: Double) -> (Thread, ResultBox<(status: Int, body: String, curlExit: Int32)>) {
        standIns.sync { self.standIns.provider.behaviour = .delay(seconds) }
        let box = ResultBox<(status: Int, body: String, curlExit: Int32)>()
        let url = sidecar.baseURL + "/v1/providers/p/vehicles/\(id)"
        let thread = Thread { box.value = try? httpGet(url) }
        thread.start()
        let deadline = Date().addingTimeInterval(5)
        while standIns.sync({ self.standIns.provider.totalFetches }) == 0 && Date() < deadline { usleep(10_000) }
        return (thread, box)
    }

    func waitForResult<T>(_ box: ResultBox<T>, timeout: Double) -> T? {
        let deadline = Date().addingTimeInterval(timeout)
        while box.value == nil && Date() < deadline { usleep(20_000) }
        return box.value
    }

    func testSlowCallFinishesDuringDrainWhileNewConnectionsAreRefused() throws {
        let sidecar = try SidecarProcess([
            "--upstream", "http://\(standIns.fleetEngineAddress)", "--provider-url", standIns.providerTemplate,
            "--admin-listen", "127.0.0.1:0", "--drain-timeout", "10",
        ])
        defer { sidecar.stop() }
        let admin = try XCTUnwrap(sidecar.adminAddress)
        XCTAssertEqual(try httpGet("http://\(admin)/readyz").status, 200)

        let (_, slow) = startSlowCall(sidecar, id: "slow-1", seconds: 2)
        let termSent = Date()
        sidecar.signal(SIGTERM)
        XCTAssertTrue(sidecar.waitForLog("draining"), sidecar.log)

        // Not ready, and the proxy port refuses new connections (curl exit 7: connect failed).
        let ready = try httpGet("http://\(admin)/readyz")
        XCTAssertEqual(ready.status, 503)
        XCTAssertTrue(ready.body.contains("draining"), ready.body)
        let refused = try httpGet(sidecar.baseURL + "/v1/providers/p/vehicles/new-1", maxTime: 3)
        XCTAssertEqual(refused.curlExit, 7, "a new connection during drain must be refused, got HTTP \(refused.status)")

        let finished = try XCTUnwrap(waitForResult(slow, timeout: 10), "the slow call never ended")
        XCTAssertEqual(finished.status, 200, "the call in flight finishes during drain: \(finished.body)")
        XCTAssertEqual(sidecar.waitForExit(timeout: 5), 0, sidecar.log)
        XCTAssertLessThan(Date().timeIntervalSince(termSent), 6, "exits once the last call is done, not at the drain timeout")
        XCTAssertTrue(sidecar.log.contains("stopped"))
    }

    func testDrainTimeoutEndsCallsStillInFlightAndExitsZero() throws {
        let sidecar = try SidecarProcess([
            "--upstream", "http://\(standIns.fleetEngineAddress)", "--provider-url", standIns.providerTemplate,
            "--drain-timeout", "1",
        ])
        defer { sidecar.stop() }
        let (_, slow) = startSlowCall(sidecar, id: "too-slow", seconds: 8)
        let termSent = Date()
        sidecar.signal(SIGINT)
        XCTAssertEqual(sidecar.waitForExit(timeout: 6), 0, sidecar.log)
        let waited = Date().timeIntervalSince(termSent)
        XCTAssertGreaterThan(waited, 0.8, "calls in flight get the drain timeout")
        XCTAssertLessThan(waited, 4)
        XCTAssertTrue(sidecar.log.contains("drain timeout reached"), sidecar.log)
        let result = try XCTUnwrap(waitForResult(slow, timeout: 5))
        XCTAssertNotEqual(result.status, 200, "a call cut by the drain timeout cannot have succeeded")
    }

    func testIdleKeepAliveConnectionsDoNotHoldUpTheExit() throws {
        let sidecar = try SidecarProcess([
            "--upstream", "http://\(standIns.fleetEngineAddress)", "--provider-url", standIns.providerTemplate,
            "--drain-timeout", "10",
        ])
        defer { sidecar.stop() }
        let client = try KeepAliveClient(address: sidecar.address)
        XCTAssertEqual(client.get("/v1/providers/p/trips/t1"), 200)
        let termSent = Date()
        sidecar.signal(SIGTERM)
        XCTAssertEqual(sidecar.waitForExit(timeout: 5), 0)
        XCTAssertLessThan(Date().timeIntervalSince(termSent), 3, "an idle connection is closed at once")
        XCTAssertNil(client.get("/v1/providers/p/trips/t1"), "the idle connection was closed")
    }
}
