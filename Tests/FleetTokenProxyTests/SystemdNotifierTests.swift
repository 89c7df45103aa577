@testable import FleetTokenProxy
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class SystemdNotifierTests: XCTestCase {
    func testMessageIsOneAssignmentALine() {
        XCTAssertEqual(SystemdNotifier.message([.ready, .status("serving on 127.0.0.1:4180")]),
                       "READY=1\nSTATUS=serving on 127.0.0.1:4180")
        XCTAssertEqual(SystemdNotifier.message([.stopping]), "STOPPING=1")
        XCTAssertEqual(SystemdNotifier.message([.watchdog]), "WATCHDOG=1")
        XCTAssertEqual(SystemdNotifier.message([.reloading]), "RELOADING=1")
    }

    func testStatusWithANewlineCannotSmuggleAnAssignment() {
        XCTAssertEqual(SystemdNotifier.message([.status("bad\nREADY=1")]), "STATUS=bad READY=1")
    }

    func testPathSocketAddressIsNulTerminated() throws {
        let (address, length) = try XCTUnwrap(SystemdNotifier.socketAddress("/run/systemd/notify"))
        XCTAssertEqual(Int32(address.sun_family), AF_UNIX)
        XCTAssertEqual(Int(length), MemoryLayout<sa_family_t>.size + "/run/systemd/notify".utf8.count + 1)
        let path = withUnsafeBytes(of: address.sun_path) { Array($0.prefix("/run/systemd/notify".utf8.count + 1)) }
        XCTAssertEqual(path, Array("/run/systemd/notify".utf8) + [0])
    }

    func testAbstractSocketAddressStartsWithNulAndHasExactLength() throws {
        let (address, length) = try XCTUnwrap(SystemdNotifier.socketAddress("@/org/freedesktop/systemd1/notify/42"))
        let name = "/org/freedesktop/systemd1/notify/42"
        XCTAssertEqual(Int(length), MemoryLayout<sa_family_t>.size + 1 + name.utf8.count, "no terminator counted")
        let bytes = withUnsafeBytes(of: address.sun_path) { Array($0.prefix(1 + name.utf8.count)) }
        XCTAssertEqual(bytes, [0] + Array(name.utf8))
    }

    func testUnusableNotifySocketValuesAreRefused() {
        XCTAssertNil(SystemdNotifier.socketAddress(""))
        XCTAssertNil(SystemdNotifier.socketAddress("@"))
        XCTAssertNil(SystemdNotifier.socketAddress("relative/path"))
        XCTAssertNil(SystemdNotifier.socketAddress("/" + String(repeating: "x", count: 200)))
        XCTAssertNil(SystemdNotifier(environment: [:]))
        XCTAssertNil(SystemdNotifier(environment: ["NOTIFY_SOCKET": ""]))
    }

    func testWatchdogIntervalIsHalfOfWatchdogUsec() {
        XCTAssertEqual(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "30000000"], pid: 7), 15)
        XCTAssertEqual(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "7"], pid: 7), 15)
    }

    func testWatchdogForAnotherProcessOrMissingOrZeroIsIgnored() {
        XCTAssertNil(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "8"], pid: 7))
        XCTAssertNil(SystemdNotifier.watchdogInterval(environment: [:], pid: 7))
        XCTAssertNil(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "0"], pid: 7))
        XCTAssertNil(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "soon"], pid: 7))
    }

    func testNotifySendsOneDatagramToTheSocket() throws {
        let path = NSTemporaryDirectory() + "notify-unit-\(getpid()).sock"
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd); unlink(path) }
        var (address, length) = try XCTUnwrap(SystemdNotifier.socketAddress(path))
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        XCTAssertEqual(bound, 0)
        let notifier = try XCTUnwrap(SystemdNotifier(environment: ["NOTIFY_SOCKET": path]))
        XCTAssertTrue(notifier.notify(.ready, .status("up")))
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        XCTAssertEqual(n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : nil, "READY=1\nSTATUS=up")
    }
}
