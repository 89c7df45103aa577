import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `Type=notify`: the binary tells a test's `NOTIFY_SOCKET` what systemd would be told.
final class SystemdNotifyTests: XCTestCase {
    var standIns: StandInHost!

    override func setUpWithError() throws {
        standIns = try StandInHost()
    }

    override func tearDown() {
        standIns?.stop()
    }

    func sidecarArguments() -> [String] {
        ["--upstream", "http://\(standIns.fleetEngineAddress)", "--provider-url", standIns.providerTemplate]
    }

    func testReadyIsSentOnceListeningAndStoppingWhenDrainStarts() throws {
        let notify = try NotifyListener()
        let sidecar = try SidecarProcess(sidecarArguments(), environment: ["NOTIFY_SOCKET": notify.name], waitForListening: false)
        defer { sidecar.stop() }
        let ready = try XCTUnwrap(notify.waitFor(line: "READY=1", timeout: 10), "no READY=1; log: \(sidecar.log)")
        // READY comes after the bind: the address it reports already takes calls.
        let status = try XCTUnwrap(ready.split(separator: "\n").first { $0.hasPrefix("STATUS=serving on ") }, ready)
        let address = String(status.dropFirst("STATUS=serving on ".count))
        let answer = try httpGet("http://\(address)/v1/providers/p/vehicles/v1")
        XCTAssertEqual(answer.status, 200, answer.body)

        sidecar.signal(SIGTERM)
        XCTAssertNotNil(notify.waitFor(line: "STOPPING=1", timeout: 5), "no STOPPING=1; log: \(sidecar.log)")
        XCTAssertEqual(sidecar.waitForExit(timeout: 10), 0)
    }

    func testNotificationsReachAnAbstractNotifySocket() throws {
        let notify = try NotifyListener(abstract: true)
        let sidecar = try SidecarProcess(sidecarArguments(), environment: ["NOTIFY_SOCKET": notify.name])
        defer { sidecar.stop() }
        XCTAssertNotNil(notify.waitFor(line: "READY=1", timeout: 10), "no READY=1 on \(notify.name); log: \(sidecar.log)")
    }

    func testWatchdogIsPettedAtHalfTheInterval() throws {
        let notify = try NotifyListener()
        // 400 ms watchdog: a ping every 200 ms.
        let sidecar = try SidecarProcess(sidecarArguments(), environment: ["NOTIFY_SOCKET": notify.name, "WATCHDOG_USEC": "400000"])
        defer { sidecar.stop() }
        XCTAssertNotNil(notify.waitFor(line: "READY=1", timeout: 10))
        let start = Date()
        var pings = 0
        while Date().timeIntervalSince(start) < 1.1 {
            if let message = notify.next(timeout: 0.2), message == "WATCHDOG=1" { pings += 1 }
        }
        XCTAssertGreaterThanOrEqual(pings, 4, "about 5 pings in 1.1 s at a 200 ms interval")
        XCTAssertLessThanOrEqual(pings, 7)
    }

    func testWatchdogMeantForAnotherProcessIsNotPetted() throws {
        let notify = try NotifyListener()
        let sidecar = try SidecarProcess(sidecarArguments(), environment: [
            "NOTIFY_SOCKET": notify.name, "WATCHDOG_USEC": "200000", "WATCHDOG_PID": "1",
        ])
        defer { sidecar.stop() }
        XCTAssertNotNil(notify.waitFor(line: "READY=1", timeout: 10))
        XCTAssertNil(notify.waitFor(line: "WATCHDOG=1", timeout: 0.6))
    }
}
