@testable import FleetTokenProxy
import Logging
import XCTest

final class LineLogHandlerTests: XCTestCase {
    let noon = (seconds: 1_738_324_800, millis: 7) // 2025-01-31T12:00:00.007Z

    func testJournaldPrioritiesFollowSdDaemon() {
        XCTAssertEqual(LineLogHandler.syslogPriority(.critical), 2)
        XCTAssertEqual(LineLogHandler.syslogPriority(.error), 3)
        XCTAssertEqual(LineLogHandler.syslogPriority(.warning), 4)
        XCTAssertEqual(LineLogHandler.syslogPriority(.notice), 5)
        XCTAssertEqual(LineLogHandler.syslogPriority(.info), 6)
        XCTAssertEqual(LineLogHandler.syslogPriority(.debug), 7)
        XCTAssertEqual(LineLogHandler.syslogPriority(.trace), 7)
    }

    func testJournalLineStartsWithPriorityAndHasNoTimestamp() {
        let handler = LineLogHandler(label: "fleet-token-proxy", journal: true)
        XCTAssertEqual(handler.format(level: .warning, message: "slow provider", metadata: ["ms": "900"], now: noon),
                       "<4>slow provider ms=900\n")
    }

    func testPlainLineHasTimestampLevelAndSortedMetadata() {
        let handler = LineLogHandler(label: "fleet-token-proxy", journal: false)
        XCTAssertEqual(handler.format(level: .notice, message: "listening", metadata: ["upstream": "http://x", "address": "127.0.0.1:1"], now: noon),
                       "2025-01-31T12:00:00.007Z notice listening address=127.0.0.1:1 upstream=http://x\n")
    }

    func testOtherLabelsAreNamed() {
        let handler = LineLogHandler(label: "fleet-token-proxy.access", journal: true)
        XCTAssertEqual(handler.format(level: .info, message: "call", metadata: [:], now: noon), "<6>fleet-token-proxy.access: call\n")
    }

    func testAnEventIsAlwaysOneLine() {
        let handler = LineLogHandler(label: "fleet-token-proxy", journal: true)
        let line = handler.format(level: .error, message: "bad\nthing", metadata: ["error": "line one\nline two", "note": "a \"quoted\" = value"], now: noon)
        XCTAssertEqual(line, #"<3>bad\nthing error="line one\nline two" note="a \"quoted\" = value""# + "\n")
        XCTAssertEqual(line.filter { $0 == "\n" }.count, 1)
    }

    func testEventsGoThroughTheWriterOnceEach() {
        let lines = LockedLines()
        var logger = Logger(label: "fleet-token-proxy") { label in
            LineLogHandler(label: label, journal: true, write: { lines.append($0) })
        }
        logger.logLevel = .info
        logger[metadataKey: "conn"] = "3"
        logger.debug("hidden")
        logger.info("shown", metadata: ["status": "200"])
        XCTAssertEqual(lines.all, ["<6>shown conn=3 status=200\n"])
    }

    func testJournalStreamMustNameStderr() {
        XCTAssertFalse(LineLogHandler.stderrIsJournal(nil))
        XCTAssertFalse(LineLogHandler.stderrIsJournal("garbage"))
        XCTAssertFalse(LineLogHandler.stderrIsJournal("0:0"))
        var st = stat()
        XCTAssertEqual(fstat(STDERR_FILENO, &st), 0)
        XCTAssertTrue(LineLogHandler.stderrIsJournal("\(st.st_dev):\(st.st_ino)"))
    }
}

/// Lines written by a handler. `@unchecked Sendable`: every access holds `lock`.
final class LockedLines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ line: String) { lock.lock(); lines.append(line); lock.unlock() }
    var all: [String] { lock.lock(); defer { lock.unlock() }; return lines }
}
