import Foundation
import XCTest

/// The unit files in `systemd/` as systemd itself judges them: `systemd-analyze verify` is
/// clean and `systemd-analyze security --offline=yes` rates the service 2.0 or lower.
final class SystemdUnitTests: XCTestCase {
    static let analyze = "/usr/bin/systemd-analyze"
    static let unitDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("systemd")

    var work: URL!

    override func setUpWithError() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.analyze) else {
            throw XCTSkip("systemd-analyze is not installed (scripts/install-deps --test installs systemd)")
        }
        work = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ftp-units-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        // verify checks that ExecStart= and ExecReload= are executable: point the installed path
        // at the built binary; every other line is the file as shipped.
        let service = try String(contentsOf: Self.unitDirectory.appendingPathComponent("fleet-token-proxy.service"), encoding: .utf8)
        XCTAssertTrue(service.contains("ExecStart=/usr/bin/fleet-token-proxy serve"))
        try service.replacingOccurrences(of: "=/usr/bin/fleet-token-proxy serve", with: "=\(SidecarProcess.binary.path) serve")
            .write(to: work.appendingPathComponent("fleet-token-proxy.service"), atomically: true, encoding: .utf8)
        try FileManager.default.copyItem(at: Self.unitDirectory.appendingPathComponent("fleet-token-proxy.socket"),
                                         to: work.appendingPathComponent("fleet-token-proxy.socket"))
    }

    override func tearDown() {
        if let work { try? FileManager.default.removeItem(at: work) }
    }

    func testUnitFilesVerifyClean() throws {
        let result = try runCommand(Self.analyze, ["verify",
                                                   work.appendingPathComponent("fleet-token-proxy.service").path,
                                                   work.appendingPathComponent("fleet-token-proxy.socket").path])
        XCTAssertEqual(result.status, 0, result.stderr + result.stdout)
        XCTAssertEqual(result.stderr.trimmingCharacters(in: .whitespacesAndNewlines), "", "verify printed warnings")
    }

    func testServiceExposureIsTwoOrLower() throws {
        let service = work.appendingPathComponent("fleet-token-proxy.service").path
        let result = try runCommand(Self.analyze, ["security", "--offline=yes", "--threshold=20", "--no-pager", service])
        let score = result.stdout.range(of: #"Overall exposure level for \S+: (\d+\.\d)"#, options: .regularExpression)
            .map { String(result.stdout[$0].split(separator: " ").last!) }
        let value = try XCTUnwrap(score.flatMap(Double.init), result.stdout + result.stderr)
        XCTAssertLessThanOrEqual(value, 2.0, result.stdout)
        XCTAssertEqual(result.status, 0, "security --threshold=20 failed:\n\(result.stdout)\(result.stderr)")
    }

    func testServiceIsNotifyTypeWithWatchdogAndCredential() throws {
        let text = try String(contentsOf: Self.unitDirectory.appendingPathComponent("fleet-token-proxy.service"), encoding: .utf8)
        let lines = Set(text.split(separator: "\n").map(String.init))
        for required in ["Type=notify", "NotifyAccess=main", "DynamicUser=yes", "ProtectSystem=strict", "NoNewPrivileges=yes",
                         "MemoryDenyWriteExecute=yes", "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6",
                         "SystemCallFilter=@system-service", "CapabilityBoundingSet=",
                         "LoadCredential=provider-headers:/etc/fleet-token-proxy/provider-headers",
                         "Environment=FLEET_TOKEN_PROXY_PROVIDER_HEADER_FILE=%d/provider-headers"] {
            XCTAssertTrue(lines.contains(required), "\(required) missing")
        }
        XCTAssertTrue(lines.contains { $0.hasPrefix("WatchdogSec=") })
    }

    /// `systemctl reload` checks the configuration first and signals only when it passes; a start
    /// is not checked by a separate command (ExecStartPre= would turn exit status 2 into a
    /// restart loop: RestartPreventExitStatus= looks at the main process only).
    func testReloadChecksTheConfigurationBeforeSignalling() throws {
        let text = try String(contentsOf: Self.unitDirectory.appendingPathComponent("fleet-token-proxy.service"), encoding: .utf8)
        let reloads = text.split(separator: "\n").filter { $0.hasPrefix("ExecReload=") }
        XCTAssertEqual(reloads, ["ExecReload=/usr/bin/fleet-token-proxy serve --check", "ExecReload=/bin/kill -HUP $MAINPID"])
        XCTAssertFalse(text.contains("\nExecStartPre="), "no check before start")
        XCTAssertTrue(text.contains("\nRestartPreventExitStatus=2\n"))
    }
}
