import CEvent
@testable import FleetTokenProxy
import Logging
import XCTest

/// libevent's severities map onto swift-log's levels, and messages that differ only in their
/// numbers are one message to the rate limit.
final class LibeventLogTests: XCTestCase {
    func testSeveritiesMapToLevels() {
        XCTAssertEqual(LibeventLog.level(severity: EVENT_LOG_DEBUG), .debug)
        XCTAssertEqual(LibeventLog.level(severity: EVENT_LOG_MSG), .info)
        XCTAssertEqual(LibeventLog.level(severity: EVENT_LOG_WARN), .warning)
        XCTAssertEqual(LibeventLog.level(severity: EVENT_LOG_ERR), .error)
    }

    func testNumbersDoNotMakeADifferentMessage() {
        let a = LibeventLog.key(for: "Epoll ADD(1) on fd 17 failed. Old events were 0; read change was 1", level: .warning)
        let b = LibeventLog.key(for: "Epoll ADD(1) on fd 1023 failed. Old events were 0; read change was 1", level: .warning)
        XCTAssertEqual(a, b)
        XCTAssertNotEqual(a, LibeventLog.key(for: "Epoll ADD(1) on fd 17 failed. Old events were 0; read change was 1", level: .error))
        XCTAssertNotEqual(a, LibeventLog.key(for: "Error from accept() call: Too many open files", level: .warning))
    }

    func testLibeventsOwnWarningsGoThroughTheLoggerOnceAnInterval() {
        let lines = LockedLines()
        var logger = Logger(label: LibeventLog.label) { label in
            LineLogHandler(label: label, journal: true, write: { lines.append($0) })
        }
        logger.logLevel = .info
        LibeventLog.install(logger: logger)
        defer { LibeventLog.remove() }
        // libevent warns (EVENT_LOG_WARN) each time it cannot read a descriptor's flags.
        for _ in 0..<1000 { XCTAssertEqual(evutil_make_socket_nonblocking(-1), -1) }
        XCTAssertEqual(lines.all.count, 1, "\(lines.all.prefix(3))")
        let line = lines.all.first ?? ""
        XCTAssertTrue(line.hasPrefix("<4>fleet-token-proxy.libevent: fcntl(-1, F_GETFL)"), line)
    }
}
