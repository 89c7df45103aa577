import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Logs: one event a line; with stderr connected to journald (`JOURNAL_STREAM` naming it),
/// each line starts with its syslog priority `<N>`.
final class JournalLogTests: XCTestCase {
    var standIns: StandInHost!

    override func setUpWithError() throws {
        standIns = try StandInHost()
    }

    override func tearDown() {
        standIns?.stop()
    }

    func run(journalStream: (ServiceProcess) -> String?, extra: [String] = []) throws -> ServiceProcess {
        let child = try ServiceProcess()
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("FLEET_TOKEN_PROXY_") }
        env["JOURNAL_STREAM"] = journalStream(child)
        try child.start(SidecarProcess.binary.path, [
            "serve", "--listen", "127.0.0.1:0", "--upstream", "http://\(standIns.fleetEngineAddress)",
            "--provider-url", standIns.providerTemplate,
        ] + extra, environment: env)
        return child
    }

    func testLinesCarryJournalPrioritiesWhenStderrIsTheJournal() throws {
        let child = try run(journalStream: { $0.stderrIdentity }, extra: ["--access-log"])
        let address = try XCTUnwrap(child.waitForLog(#"address=(\S+)"#), child.log)
        XCTAssertEqual(try httpGet("http://\(address)/v1/providers/p/vehicles/v1").status, 200)
        child.signal(SIGTERM)
        XCTAssertEqual(child.waitForExit(), 0)
        let lines = child.log.split(separator: "\n")
        // notice is 5, and "listening" is a notice.
        XCTAssertTrue(lines.contains { $0.hasPrefix("<5>listening address=") }, child.log)
        XCTAssertTrue(lines.contains { $0.hasPrefix("<5>stopped") }, child.log)
        XCTAssertTrue(lines.allSatisfy { $0.range(of: #"^<[0-7]>"#, options: .regularExpression) != nil }, "every line has a priority:\n\(child.log)")
    }

    func testNoPriorityWhenJournalStreamNamesAnotherFile() throws {
        // Set by a parent under systemd, but stderr was redirected since: not the journal.
        let child = try run(journalStream: { _ in "1:1" })
        XCTAssertNotNil(child.waitForLog(#"address=(\S+)"#), child.log)
        child.signal(SIGTERM)
        XCTAssertEqual(child.waitForExit(), 0)
        let lines = child.log.split(separator: "\n")
        XCTAssertFalse(lines.isEmpty)
        XCTAssertTrue(lines.allSatisfy { !$0.hasPrefix("<") }, child.log)
        XCTAssertTrue(lines.contains { $0.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z notice listening "#, options: .regularExpression) != nil }, child.log)
    }
}
