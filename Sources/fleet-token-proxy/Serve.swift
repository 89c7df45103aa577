import ArgumentParser
import FleetTokenProxy
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging

/// `fleet-token-proxy serve`: the sidecar itself (docs/CONTRACT.md §6).
struct Serve: ParsableCommand {
    // Named here, not derived from the type's name: deriving it prints the type through the
    // runtime's demangler and reflection at every start (README, Benchmark: idle memory).
    static let configuration = CommandConfiguration(commandName: "serve", abstract: "Run the sidecar.")

    @Option(help: "Listen address: host:port, [v6]:port or unix:/path.")
    var listen = "127.0.0.1:4180"
    @Flag(help: "Allow listening on an address that is not loopback.")
    var allowNonLoopback = false
    @Option(help: "Fleet Engine base URL.")
    var upstream = "https://fleetengine.googleapis.com"
    @Option(help: "Trust this CA (PEM) for the upstream instead of the system trust store.")
    var upstreamCaFile: String?
    @Option(help: "What REST calls speak to the upstream: auto, h2 (HTTP/2; h2c with prior knowledge for http://) or http1.1.")
    var upstreamProtocol = "auto"
    @Option(help: "Token provider URL template with {type}, {id} and {provider}; the source of every token type no --signer names.")
    var providerUrl: String?
    @Option(help: ArgumentHelp("Where tokens of some types come from instead of the provider: [TYPES=]key-file:PATH (sign locally), [TYPES=]iam:EMAIL (sign with IAM signJwt as EMAIL, authorised by Application Default Credentials) or [TYPES=]adc (attach the Application Default Credentials' access token), TYPES a comma list of vehicle, trip, delivery_vehicle, task, tracking, fleet (default: every type no other --signer names). Repeatable; the key file is re-read on SIGHUP.", valueName: "[TYPES=]SOURCE"))
    var signer: [String] = []
    @Option(help: "Seconds from iat to exp of a token a --signer mints (60 to 3600).")
    var signedTokenLifetime: Double = 3600
    @Option(help: "OAuth 2.0 token endpoint for Application Default Credentials (a service-account key file's token_uri wins).")
    var oauthTokenEndpoint = GoogleEndpoint.oauthTokenDefault
    @Option(help: "Authenticate to the token provider with a Google-signed ID token for this audience, from Application Default Credentials (a provider on Cloud Run or Cloud Functions behind IAM).")
    var providerIdTokenAudience: String?
    @Option(help: "IAM Service Account Credentials API for --signer iam:EMAIL.")
    var iamEndpoint = GoogleEndpoint.iamDefault
    @Option(help: "'Name: value' header sent to the token provider (repeatable).")
    var providerHeader: [String] = []
    @Option(help: "File with one 'Name: value' header a line, re-read on SIGHUP.")
    var providerHeaderFile: String?
    @Option(help: "Trust this CA (PEM) for the token provider.")
    var providerCaFile: String?
    @Option(help: "JSON field holding the token (default: token, jwt, access_token).")
    var tokenField: String?
    @Option(help: "JSON field holding the expiry (default: expirationTimestamp, expiration, expires_at, expiresInSeconds, expires_in, TOKEN_EXPIRATION).")
    var expiryField: String?
    @Option(help: "Seconds before expiry when a token is due for refresh.")
    var refreshMargin: Double = 300
    @Option(help: "Never attach a token with fewer seconds of validity left.")
    var minTokenValidity: Double = 60
    @Option(help: "Most entities kept in the token cache (least recently used leave first).")
    var maxEntities = 100_000
    @Option(help: "Most token provider fetches in flight at once.")
    var providerConcurrency = 32
    @Option(help: "Seconds allowed for one token provider fetch.")
    var providerTimeout: Double = 10
    @Flag(help: "Refresh tokens only when a call needs one (no timers).")
    var lazyRefresh = false
    @Option(help: "Longest wait, in seconds, between token provider fetches for an entity whose fetches keep failing.")
    var providerBackoffMax: Double = 60
    @Option(help: "Admin listener for /healthz, /readyz and /metrics (off unless given).")
    var adminListen: String?
    @Flag(help: "Log one line per call (method, route, entity type, status, duration, cache outcome).")
    var accessLog = false
    @Option(help: "Permissions (octal) of a unix:/path listener.")
    var socketMode: String?
    @Option(help: "Most request bytes held, all connections together, before they are forwarded; past it new calls are refused (503, gRPC RESOURCE_EXHAUSTED). At least 65536.")
    var maxBufferedBytes = ServerLimits().maxBufferedBytes
    @Option(help: "On SIGTERM, seconds given to calls in flight.")
    var drainTimeout: Double = 10
    @Option(help: "Seconds an idle upstream connection (HTTP/2 or HTTP/1.1) is kept open.")
    var upstreamIdleTimeout: Double = Configuration.defaultUpstreamIdleTimeout
    @Option(help: "trace|debug|info|notice|warning|error|critical")
    var logLevel = "info"
    // Not a FLEET_TOKEN_PROXY_ variable (main.swift's serveFlags): a service whose environment
    // file set it would check and exit instead of serving.
    @Flag(help: "Check everything start-up checks (flags and FLEET_TOKEN_PROXY_ variables, files and their modes, the provider URL template, the listen addresses, Application Default Credentials), then exit 0 printing one line that says what would run, or exit 2 with the line a failed start prints. Binds no port (one in use is not an error) and dials neither the upstream nor the provider.")
    var check = false

    /// Checks and assembles the configuration; every problem is a `ConfigError` line.
    func makeConfiguration() throws -> Configuration {
        var config = Configuration(upstream: try UpstreamURL.parse(upstream), providerURL: try providerUrl.map { try ProviderURLTemplate.parse($0) })
        config.signers = try signer.map { try SignerFlag.parse($0) }
        config.signedTokenLifetime = signedTokenLifetime
        config.oauthTokenEndpoint = try GoogleEndpoint.parse(oauthTokenEndpoint, what: "--oauth-token-endpoint")
        config.iamEndpoint = try GoogleEndpoint.parse(iamEndpoint, what: "--iam-endpoint")
        config.providerIDTokenAudience = providerIdTokenAudience
        config.listen = try ListenAddress.parse(listen)
        config.allowNonLoopback = allowNonLoopback
        config.upstreamCAFile = try readableFile(upstreamCaFile, flag: "--upstream-ca-file")
        config.upstreamProtocol = try UpstreamProtocol.parse(upstreamProtocol)
        config.providerCAFile = try readableFile(providerCaFile, flag: "--provider-ca-file")
        config.providerHeaderFile = try readableFile(providerHeaderFile, flag: "--provider-header-file")
        for line in providerHeader {
            do {
                let h = try HeaderLine.parse(line)
                config.providerHeaders.append(HeaderField(name: h.name, value: h.value))
            } catch {
                throw ConfigError("--provider-header: \(error.message)")
            }
        }
        config.tokenField = tokenField
        config.expiryField = expiryField
        config.refreshMargin = refreshMargin
        config.minTokenValidity = minTokenValidity
        config.maxEntities = maxEntities
        config.providerConcurrency = providerConcurrency
        config.providerTimeout = providerTimeout
        config.lazyRefresh = lazyRefresh
        config.providerBackoffMax = providerBackoffMax
        config.adminListen = try adminListen.map { try ListenAddress.parse($0) }
        config.accessLog = accessLog
        if let socketMode {
            guard let mode = UInt32(socketMode, radix: 8), mode <= 0o777 else {
                throw ConfigError("--socket-mode must be octal permissions such as 0660, not \(socketMode.prefix(16))")
            }
            config.socketMode = mode
        }
        config.drainTimeout = drainTimeout
        config.upstreamIdleTimeout = upstreamIdleTimeout
        config.limits.maxBufferedBytes = maxBufferedBytes
        guard let level = Logger.Level(rawValue: logLevel.lowercased()) else {
            throw ConfigError("--log-level must be one of trace, debug, info, notice, warning, error, critical")
        }
        config.logLevel = level
        try config.validate()
        return config
    }

    func execute() throws -> Int32 {
        if check { return try executeCheck() }
        var config = try makeConfiguration()
        let environment = ProcessEnvironment.current()
        config.credentialEnvironment = environment
        let logger = LogSetup.makeLogger(level: config.logLevel)
        // Before the loop exists: none of libevent's own lines may reach stderr raw.
        LibeventLog.install(level: config.logLevel)
        // Read (and unset) before anything else can start a child that would inherit them.
        let activated = try SocketActivation.takeFromEnvironment(environment)
        let (loop, sidecar) = try build(config, logger: logger)
        let notifier = SystemdNotifier(environment: environment)
        var draining = false
        var address = ""
        let stop = {
            guard !draining else { return }
            draining = true
            notifier?.notify(.stopping, .status("draining: finishing calls in flight"))
            logger.notice("draining", metadata: ["timeout_s": "\(config.drainTimeout)"])
            sidecar.drain(timeout: config.drainTimeout) {
                logger.notice("stopped")
                loop.stop()
            }
        }
        // Before the sidecar listens and logs its address: a SIGTERM sent by whoever read that
        // line must drain and exit 0, not kill the process (libevent catches the signal now and
        // hands it to `stop` once the loop runs).
        loop.onSignal(SIGTERM, stop)
        loop.onSignal(SIGINT, stop)
        loop.onSignal(SIGHUP) {
            sidecar.reloadProviderHeaders()
            sidecar.reloadSigningKeys()
            if !draining { notifier?.notify(.status("serving on \(address); credentials reloaded")) }
        }
        do {
            address = activated.isEmpty ? try sidecar.start() : try sidecar.start(adopting: activated)
        } catch let error as ConfigError {
            throw error
        } catch {
            throw StartupError(message: "\(error)")
        }
        // Only now, with the signals handled: systemd may send SIGTERM as soon as it is told.
        if let notifier {
            if !notifier.notify(.ready, .status("serving on \(address)")) {
                logger.warning("could not notify the service manager", metadata: ["socket": "\(notifier.socketName)"])
            }
            if let interval = SystemdNotifier.watchdogInterval(environment: environment, pid: getpid()) {
                notifier.startWatchdog(on: loop, every: interval)
            }
        }
        loop.run()
        return 0
    }
}

extension Serve {
    /// `serve --check`: the same steps as a start up to binding (so a failure is the same line,
    /// through main's `fail`), then the configuration's summary on stdout instead of serving.
    /// Socket activation's sockets are not looked at: they are checked when the service starts.
    func executeCheck() throws -> Int32 {
        var config = try makeConfiguration()
        config.credentialEnvironment = ProcessEnvironment.current()
        // The summary is the one line: start-up's notices (credentials found) stay out of it.
        _ = try build(config, logger: LogSetup.makeLogger(level: max(config.logLevel, .warning)))
        StandardStreams.output("fleet-token-proxy: \(try config.summary())\n")
        return 0
    }

    /// Everything start-up makes before it binds: files read, credentials found, TLS contexts.
    func build(_ config: Configuration, logger: Logger) throws -> (EventLoop, Sidecar) {
        do {
            let loop = try EventLoop()
            return (loop, try Sidecar(configuration: config, loop: loop, logger: logger))
        } catch let error as ConfigError {
            throw error
        } catch {
            throw StartupError(message: "\(error)")
        }
    }
}

/// A path that must be readable at start-up (docs/CONTRACT.md §6: an unreadable file stops start-up).
func readableFile(_ path: String?, flag: String) throws -> String? {
    guard let path else { return nil }
    guard access(path, R_OK) == 0 else {
        throw ConfigError("\(flag) \(path) cannot be read")
    }
    return path
}
