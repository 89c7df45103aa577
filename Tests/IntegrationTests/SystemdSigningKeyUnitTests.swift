import Foundation
import XCTest

/// The unit's commented local-signing lines (README "Credentials") are a working example:
/// uncommented, `systemd-analyze verify` is still clean and the key reaches `--signer` through
/// the unit's credential directory.
final class SystemdSigningKeyUnitTests: XCTestCase {
    func testTheUncommentedSigningKeyLinesVerifyClean() throws {
        guard FileManager.default.isExecutableFile(atPath: SystemdUnitTests.analyze) else {
            throw XCTSkip("systemd-analyze is not installed (scripts/install-deps --test installs systemd)")
        }
        let shipped = try String(contentsOf: SystemdUnitTests.unitDirectory.appendingPathComponent("fleet-token-proxy.service"), encoding: .utf8)
        let commented = ["#LoadCredential=signing-key:/etc/fleet-token-proxy/signing-key.json",
                         "#Environment=FLEET_TOKEN_PROXY_SIGNER=key-file:%d/signing-key"]
        // verify checks that ExecStart= and ExecReload= are executable (as SystemdUnitTests).
        var service = shipped.replacingOccurrences(of: "=/usr/bin/fleet-token-proxy serve", with: "=\(SidecarProcess.binary.path) serve")
        for line in commented {
            XCTAssertTrue(service.contains(line + "\n"), "the unit shows \(line)")
            service = service.replacingOccurrences(of: line + "\n", with: String(line.dropFirst()) + "\n")
        }
        let work = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ftp-signing-unit-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let path = work.appendingPathComponent("fleet-token-proxy.service").path
        try service.write(toFile: path, atomically: true, encoding: .utf8)

        let result = try runCommand(SystemdUnitTests.analyze, ["verify", path])
        XCTAssertEqual(result.status, 0, result.stderr + result.stdout)
        XCTAssertEqual(result.stderr.trimmingCharacters(in: .whitespacesAndNewlines), "", "verify printed warnings")
    }
}
