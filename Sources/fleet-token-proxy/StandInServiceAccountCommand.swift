import ArgumentParser
import FleetTokenProxy
import FleetTokenProxyStandIns
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension StandIn {
    /// A throwaway service account for `serve --signer key-file:` and `stand-in fleet-engine
    /// --jwks` (docs/CONTRACT.md §4a): scripts/bench's signing mode and manual trials make one
    /// with no Google project.
    struct ServiceAccount: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "service-account",
            abstract: "Write a new service-account key file (mode 0600) and the JWKS that verifies its tokens.",
            discussion: """
                Writes DIR/key.json and DIR/EMAIL.json, a JWKS whose keys `stand-in fleet-engine --jwks` \
                trusts for EMAIL alone, and prints `key-file PATH` and `jwks PATH`.
                """)

        @Option(help: "The folder to write into (made, mode 0700, if missing).")
        var out: String
        @Option(help: "The account's name: NAME@PROJECT.iam.gserviceaccount.com.")
        var name = "fleet-signer"
        @Option(help: "The account's project.")
        var project = "stand-in-project"

        func execute() throws -> Int32 {
            if !FileManager.default.fileExists(atPath: out) {
                do {
                    try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true,
                                                            attributes: [.posixPermissions: 0o700])
                } catch {
                    throw ConfigError("--out \(out) cannot be made")
                }
            }
            let account = try StandInServiceAccount(name: name, project: project)
            let keyFile = out + "/key.json"
            let jwks = out + "/\(account.email).json"
            try account.writeKeyFile(to: keyFile)
            do {
                try account.jwksText().write(toFile: jwks, atomically: true, encoding: .utf8)
            } catch {
                throw ConfigError("the JWKS \(jwks) cannot be written")
            }
            StandardStreams.output("key-file \(keyFile)\njwks \(jwks)\n")
            return 0
        }
    }
}
