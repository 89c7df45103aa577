import ArgumentParser
import FleetTokenProxy
import FleetTokenProxyStandIns
import Foundation

/// `fleet-token-proxy demo`: the whole path on loopback with local stand-ins, then a summary.
struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the sidecar between a stand-in token provider and a stand-in Fleet Engine, under load, and print a summary.")

    @Option(help: "Simulated vehicles sending location updates.")
    var vehicles = 200
    @Option(help: "Seconds of load.")
    var duration: Double = 15
    @Option(help: "Lifetime in seconds of the tokens the stand-in provider mints.")
    var tokenLifetime: Double = 12

    func execute() -> Int32 {
        var options = DemoOptions()
        options.vehicles = max(1, vehicles)
        options.duration = max(1, duration)
        options.tokenLifetime = max(4, tokenLifetime)
        do {
            let run = try DemoRun(options: options) { line in
                FileHandle.standardOutput.write(Data((line + "\n").utf8))
            }
            let summary = try run.run()
            DemoRun.describe(summary, options: options).forEach { print($0) }
            return summary.rejectedByFleetEngine == 0 && summary.failedCalls == 0 && summary.calls > 0 ? 0 : 1
        } catch {
            FileHandle.standardError.write(Data("fleet-token-proxy demo: \(error)\n".utf8))
            return 1
        }
    }
}

/// Loopback stand-ins for benchmarks and manual trials.
struct StandIn: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stand-in",
        abstract: "Run a loopback stand-in (for benchmarks and trials).",
        subcommands: [Provider.self])

    /// A token provider that mints Fleet Engine shaped JWTs with a key made at start.
    struct Provider: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Serve GET /token/{provider}/{type}/{id} with minted JWTs.")

        @Option(help: "Listen address (loopback).")
        var listen = "127.0.0.1:4190"
        @Option(help: "Token lifetime in seconds.")
        var tokenLifetime: Double = 3600
        @Option(help: "Write the signing key's public half (PEM) to this file, to verify the minted tokens' RS256 signatures with.")
        var publicKeyOut: String?

        func execute() throws -> Int32 {
            let address = try ListenAddress.parse(listen)
            guard address.isLoopback else { throw ConfigError("stand-in listens on loopback only") }
            let loop = try EventLoop()
            let clock = SystemClock()
            let keyPair = try RSAKeyPair.generate()
            if let publicKeyOut {
                try keyPair.publicKeyPEM.write(toFile: publicKeyOut, atomically: true, encoding: .utf8)
            }
            let provider = StandInProvider(keyPair: keyPair, scheduler: loop, wallClock: { clock.wallNow })
            provider.tokenLifetime = tokenLifetime
            let server = BufferedHTTPServer(loop: loop, handler: provider.handler)
            let bound = try server.listen(on: address)
            FileHandle.standardError.write(Data("stand-in provider listening on \(bound)\n".utf8))
            loop.onSignal(SIGTERM) { loop.stop() }
            loop.onSignal(SIGINT) { loop.stop() }
            loop.run()
            server.close()
            return 0
        }
    }
}
