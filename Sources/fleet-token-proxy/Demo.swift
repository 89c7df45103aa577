import ArgumentParser
import FleetTokenProxy
import FleetTokenProxyStandIns
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `fleet-token-proxy demo`: the whole path on loopback with local stand-ins, then a summary.
struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "demo", abstract: "Run the sidecar between a stand-in token provider and a stand-in Fleet Engine, under load, and print a summary.")

    @Option(help: "Simulated vehicles sending location updates.")
    var vehicles = 200
    @Option(help: "Seconds of load.")
    var duration: Double = 15
    @Option(help: "Lifetime in seconds of the tokens the stand-in provider mints (with --signer, of the tokens the sidecar signs: at least 60).")
    var tokenLifetime: Double = 12
    @Option(help: "key-file: no provider; the sidecar signs every token with a throwaway service-account key file (mode 0600) that the stand-in Fleet Engine knows. iam: the stand-in Google's IAM signJwt signs them, authorised by its metadata server's access token.")
    var signer: String?

    func execute() -> Int32 {
        var options = DemoOptions()
        if let signer {
            switch signer {
            case "key-file": options.signWithKeyFile = true
            case "iam": options.signWithIAM = true
            default: return fail("demo --signer takes key-file or iam")
            }
        }
        options.vehicles = max(1, vehicles)
        options.duration = max(1, duration)
        options.tokenLifetime = max(4, tokenLifetime)
        do {
            let run = try DemoRun(options: options) { line in
                StandardStreams.output(line + "\n")
            }
            let summary = try run.run()
            DemoRun.describe(summary, options: options).forEach { print($0) }
            return summary.rejectedByFleetEngine == 0 && summary.failedCalls == 0 && summary.calls > 0 ? 0 : 1
        } catch {
            StandardStreams.error("fleet-token-proxy demo: \(error)\n")
            return 1
        }
    }
}

/// Loopback stand-ins for benchmarks and manual trials.
struct StandIn: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stand-in",
        abstract: "Run a loopback stand-in (for benchmarks and trials).",
        subcommands: [Provider.self, FleetEngine.self, ServiceAccount.self, Google.self])

    /// The `--listen` address of a stand-in: loopback only, since a stand-in mints or accepts
    /// tokens for anyone who reaches it.
    static func loopbackAddress(_ listen: String) throws -> ListenAddress {
        let address = try ListenAddress.parse(listen)
        guard address.isLoopback else { throw ConfigError("stand-in listens on loopback only") }
        return address
    }

    /// Serves `handler` on `address` until SIGTERM or SIGINT; exit status 0.
    static func serve(_ handler: @escaping HTTPHandler, named name: String, on address: ListenAddress, loop: EventLoop) throws -> Int32 {
        let server = BufferedHTTPServer(loop: loop, handler: handler)
        let bound = try server.listen(on: address)
        StandardStreams.error("stand-in \(name) listening on \(bound)\n")
        loop.onSignal(SIGTERM) { loop.stop() }
        loop.onSignal(SIGINT) { loop.stop() }
        loop.run()
        server.close()
        return 0
    }

    /// Google's credential endpoints for `--signer adc` and `iam:` (docs/CONTRACT.md §4a) on one
    /// port, for a service account made at start whose public key `stand-in fleet-engine --jwks`
    /// is given: its key file, or an `external_account` file that reaches it keyless (workload
    /// identity federation, for scripts/bench signing with SIGNER=iam).
    struct Google: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "google",
            abstract: "Serve Google's credential endpoints as Google's check them: the OAuth token endpoint (POST /token), the metadata server's token path, IAM signJwt, generateAccessToken and generateIdToken, and STS (POST /v1/token) for its own OIDC identity provider.")

        @Option(help: "Listen address (loopback, with a port: the key file's token_uri names it).")
        var listen = "127.0.0.1:4192"
        @Option(help: "The project of the service account (the provider id of the calls Fleet Engine accepts).")
        var project = "p"
        @Option(help: "Write the service account's key file here (mode 0600), its token_uri this stand-in: GOOGLE_APPLICATION_CREDENTIALS for the sidecar.")
        var keyFileOut: String?
        @Option(help: "Write the service account's public keys (JWKS) here, for `stand-in fleet-engine --jwks`; name it ACCOUNT.json to bind the key to the account.")
        var jwksOut: String?
        @Option(help: "Answer every token request with this status (400 and 403 as an invalid_grant refusal, others with a short body), for trying the error rows.")
        var answerStatus: Int?
        @Option(help: "Access token lifetime in seconds.")
        var tokenLifetime: Double = 3600
        @Option(help: "Write here (made, mode 0700, if missing) external-account.json, an external_account ADC file whose pool is this stand-in's, impersonating its account, and oidc-token, its subject token: GOOGLE_APPLICATION_CREDENTIALS for a keyless sidecar.")
        var externalAccountOut: String?

        func execute() throws -> Int32 {
            let address = try StandIn.loopbackAddress(listen)
            let loop = try EventLoop()
            let clock = SystemClock()
            let account = try StandInServiceAccount(name: "fleet-admin", project: project)
            let google = StandInGoogle(account: account, scheduler: loop, wallClock: { clock.wallNow })
            google.tokenURI = "http://\(address)/token"
            google.tokenLifetime = tokenLifetime
            if let status = answerStatus {
                google.failure = status == 400 || status == 403
                    ? .refuse(status: status, error: "invalid_grant", description: "the stand-in was told to refuse")
                    : .status(status)
            }
            if let keyFileOut { try account.writeKeyFile(to: keyFileOut, tokenURI: google.tokenURI) }
            if let jwksOut { try account.jwksText().write(toFile: jwksOut, atomically: true, encoding: .utf8) }
            if let externalAccountOut {
                do {
                    try FileManager.default.createDirectory(atPath: externalAccountOut, withIntermediateDirectories: true,
                                                            attributes: [.posixPermissions: 0o700])
                } catch {
                    throw ConfigError("--external-account-out \(externalAccountOut) cannot be made")
                }
                _ = try google.writeExternalAccount(origin: "http://\(address)", in: externalAccountOut)
            }
            StandardStreams.error("stand-in google account \(account.email) key \(account.keyPair.keyID)\n")
            return try StandIn.serve(google.handler, named: "google", on: address, loop: loop)
        }
    }

    /// A token provider that mints Fleet Engine shaped JWTs with a key made at start.
    struct Provider: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "provider", abstract: "Serve GET /token/{provider}/{type}/{id} with minted JWTs.")

        @Option(help: "Listen address (loopback).")
        var listen = "127.0.0.1:4190"
        @Option(help: "Token lifetime in seconds.")
        var tokenLifetime: Double = 3600
        @Option(help: "Write the signing key's public half (PEM) to this file, for `stand-in fleet-engine --public-key` to verify the minted tokens with.")
        var publicKeyOut: String?
        @Option(help: "The key id (`kid`) the minted tokens name; random unless given. `stand-in fleet-engine --key-id` must match it.")
        var keyId: String?
        @Option(help: "Sign with the private key (PEM) in this file, made (mode 0600) if missing: a restarted stand-in keeps its key.")
        var keyFile: String?
        @Option(help: "A 'Name: value' header every token request must carry; others get 401.")
        var requireHeader: String?
        @Option(help: "Seconds each answer waits before it is sent (a slow backend).")
        var delay: Double = 0
        @Flag(help: "Sign one token and put its signature on every other: tokens of the real length for a fraction of the CPU, which do not verify (benchmarks with an upstream that checks nothing).")
        var reuseSignature = false

        func execute() throws -> Int32 {
            let address = try StandIn.loopbackAddress(listen)
            // A delayed answer leaves after `delay`, not after the next whole millisecond: the
            // bench's cold-miss row is measured against this delay.
            let loop = try EventLoop(preciseTimers: delay > 0)
            let clock = SystemClock()
            let keyPair = try RSAKeyPair(privateKeyPEM: try signingKeyPEM(), keyID: keyId)
            if let publicKeyOut {
                try keyPair.publicKeyPEM.write(toFile: publicKeyOut, atomically: true, encoding: .utf8)
            }
            let provider = StandInProvider(keyPair: keyPair, scheduler: loop, wallClock: { clock.wallNow })
            provider.tokenLifetime = tokenLifetime
            if let requireHeader {
                let header = try HeaderLine.parse(requireHeader)
                provider.requiredHeader = (name: header.name, value: header.value)
            }
            if delay > 0 { provider.behaviour = .delay(delay) }
            if reuseSignature { try provider.reuseOneSignature() }
            return try StandIn.serve(provider.handler, named: "provider", on: address, loop: loop)
        }

        /// The key in `--key-file`, or a new one (written there when the flag is given).
        private func signingKeyPEM() throws -> String {
            if let keyFile, let pem = try? String(contentsOfFile: keyFile, encoding: .utf8) { return pem }
            let pem = try RSAKeyPair.generate().privateKeyPEM()
            if let keyFile {
                guard FileManager.default.createFile(atPath: keyFile, contents: Data(pem.utf8), attributes: [.posixPermissions: 0o600]) else {
                    throw ConfigError("--key-file \(keyFile) cannot be written")
                }
            }
            return pem
        }
    }

    /// A Fleet Engine that checks each call's token against the call's entity, as Fleet Engine
    /// does, and answers with the entity's resource name: with the sidecar between it and a
    /// client, a 200 shows the call carried the right entity's token.
    struct FleetEngine: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "fleet-engine",
            abstract: "Serve Fleet Engine's REST calls over plain HTTP, checking every token against the call's entity.")

        @Option(help: "Listen address (loopback).")
        var listen = "127.0.0.1:4191"
        @Option(help: "The token provider's public key (PEM), as `stand-in provider --public-key-out` writes it.")
        var publicKey: String?
        @Option(help: "The key id the tokens must name, as given to `stand-in provider --key-id`.")
        var keyId: String?
        @Option(help: "Service accounts' public keys: a JWKS file, or a directory of them; a file named ACCOUNT.json holds that account's keys, which sign for it alone (as with --signer key-file:).")
        var jwks: String?

        func execute() throws -> Int32 {
            let address = try StandIn.loopbackAddress(listen)
            var trusted: [FleetEngineTokenCheck.TrustedKey] = []
            if let publicKey {
                guard let keyId else { throw ConfigError("--public-key needs --key-id") }
                let pem: String
                do {
                    pem = try String(contentsOfFile: publicKey, encoding: .utf8)
                } catch {
                    throw ConfigError("--public-key \(publicKey) cannot be read")
                }
                trusted.append(.init(account: nil, keyID: keyId, publicKey: try RSAPublicKey(pem: pem)))
            }
            if let jwks { trusted += try JSONWebKeySet.trustedKeys(at: jwks) }
            guard !trusted.isEmpty else { throw ConfigError("give --public-key and --key-id, or --jwks: keys to trust") }
            let loop = try EventLoop()
            let clock = SystemClock()
            let engine = StandInFleetEngine(tokenCheck: FleetEngineTokenCheck(trustedKeys: trusted),
                                            classify: RESTRoute.classify, wallClock: { clock.wallNow })
            return try StandIn.serve(engine.handler, named: "fleet-engine", on: address, loop: loop)
        }
    }
}
