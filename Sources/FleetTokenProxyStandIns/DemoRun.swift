import FleetTokenProxy
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Logging

/// `fleet-token-proxy demo`: the whole path on loopback. A stand-in token provider mints
/// Fleet Engine shaped RS256 JWTs; a stand-in Fleet Engine checks every call's token against
/// the call's entity as Fleet Engine does; the sidecar sits between them and a fleet of
/// simulated clients, on one event loop. Tokens are short-lived so they are refreshed during
/// the run. With `signWithKeyFile` there is no provider: the sidecar signs every token with a
/// throwaway service-account key file (`--signer key-file:`, docs/CONTRACT.md §4a), and the
/// stand-in Fleet Engine trusts that account's key alone. With `signWithIAM` the stand-in
/// Google's IAM `signJwt` signs them (`--signer iam:`), authorised by an access token from its
/// metadata server path (ADC through `GCE_METADATA_HOST`).
package struct DemoOptions: Sendable {
    package var vehicles = 200
    package var trips = 30
    package var tasks = 30
    /// Seconds of steady load after the cold start.
    package var duration: Double = 15
    /// Lifetime of the tokens the stand-in provider mints, or the sidecar signs (at least 60 s then).
    package var tokenLifetime: Double = 12
    /// Sign tokens in the sidecar with a key file instead of asking a stand-in provider.
    package var signWithKeyFile = false
    /// Sign tokens through the stand-in Google's IAM signJwt instead of asking a stand-in provider.
    package var signWithIAM = false
    /// Client connections to the sidecar.
    package var connections = 32
    /// Seconds between two location updates of one vehicle.
    package var updateInterval: Double = 1
    package init() {}
}

/// What a demo run measured.
package struct DemoSummary: Sendable {
    package var calls = 0
    package var answeredOK = 0
    package var failedCalls = 0
    package var rejectedByFleetEngine = 0
    package var acceptedByFleetEngine = 0
    package var cacheHits = 0
    package var cacheMisses = 0
    package var coalesced = 0
    /// Tokens the provider minted, or the sidecar signed with the key file.
    package var providerCalls = 0
    package var signedLocally = false
    /// Where signed tokens came from: "the key file" or "IAM signJwt".
    package var signedBy = "the key file"
    package var entities = 0
    package var maxProviderCallsForOneEntity = 0
    package var statusCounts: [Int: Int] = [:]

    package var cacheHitRate: Double {
        let total = cacheHits + cacheMisses
        return total == 0 ? 0 : Double(cacheHits) / Double(total)
    }
}

package final class DemoRun {
    private let options: DemoOptions
    private let output: (String) -> Void
    private let loop: EventLoop
    private let clock = SystemClock()
    private var provider: StandInProvider?
    private var fleetEngine: StandInFleetEngine!
    private var providerServer: BufferedHTTPServer?
    private var googleServer: BufferedHTTPServer?
    /// The throwaway key file's folder, removed at the end.
    private var keyDirectory: String?
    private var fleetEngineServer: BufferedHTTPServer!
    private var sidecar: Sidecar!
    private var client: DemoClient!
    private var summary = DemoSummary()
    private var workload: [DemoCall] = []
    private var stopping = false
    private var startedAt = 0.0

    package init(options: DemoOptions, output: @escaping (String) -> Void) throws {
        self.options = options
        self.output = output
        loop = try EventLoop()
    }

    /// Runs the demo to the end; returns the summary.
    package func run() throws -> DemoSummary {
        let logger = LogSetup.makeLogger(level: .warning, label: "demo")
        let tokenSource: String
        let tokenCheck: FleetEngineTokenCheck
        var config: Configuration
        if options.signWithIAM {
            let account = try StandInServiceAccount(name: "demo-signer", project: "demo-project")
            let google = StandInGoogle(account: account, scheduler: loop, wallClock: { [clock] in clock.wallNow })
            let server = BufferedHTTPServer(loop: loop, handler: google.handler)
            let googleAddress = try server.listen(on: .inet(host: "127.0.0.1", port: 0))
            googleServer = server
            tokenCheck = FleetEngineTokenCheck(trustedKeys: [account.trustedKey])
            config = Configuration(upstream: try UpstreamURL.parse("http://127.0.0.1:1"), providerURL: nil)
            config.signers = [SignerFlag(types: nil, source: .iam(account: account.email))]
            config.iamEndpoint = try GoogleEndpoint.parse("http://\(googleAddress)", what: "the stand-in IAM")
            // No key anywhere on the sidecar's side: workload identity federation, as a host off
            // Google Cloud has it (an OIDC token of its own identity provider, exchanged at STS,
            // impersonating the signing account).
            let directory = try Self.makePrivateDirectory()
            keyDirectory = directory
            config.credentialEnvironment = ["GOOGLE_APPLICATION_CREDENTIALS": try google.writeExternalAccount(origin: "http://\(googleAddress)", in: directory)]
            config.signedTokenLifetime = max(60, options.tokenLifetime)
            summary.signedBy = "IAM signJwt"
            tokenSource = "  stand-in Google          http://\(googleAddress)  (workload identity federation: OIDC token, STS, generateAccessToken; IAM signJwt as \(account.email), \(Int(config.signedTokenLifetime)) s lifetime)"
        } else if options.signWithKeyFile {
            let account = try StandInServiceAccount(name: "demo-signer", project: "demo-project")
            let directory = try Self.makePrivateDirectory()
            keyDirectory = directory
            try account.writeKeyFile(to: directory + "/key.json")
            tokenCheck = FleetEngineTokenCheck(trustedKeys: [account.trustedKey])
            config = Configuration(upstream: try UpstreamURL.parse("http://127.0.0.1:1"), providerURL: nil)
            config.signers = [SignerFlag(types: nil, source: .keyFile(path: directory + "/key.json"))]
            config.signedTokenLifetime = max(60, options.tokenLifetime)
            tokenSource = "  key file (mode 0600)     \(directory)/key.json  (\(account.email), RS256, \(Int(config.signedTokenLifetime)) s lifetime)"
        } else {
            let keyPair = try RSAKeyPair.generate()
            let provider = StandInProvider(keyPair: keyPair, scheduler: loop, wallClock: { [clock] in clock.wallNow })
            provider.tokenLifetime = options.tokenLifetime
            // A provider round trip that takes a moment, as a real backend's does: it is what
            // makes concurrent cold calls pile up on one fetch.
            provider.behaviour = .delay(0.05)
            let server = BufferedHTTPServer(loop: loop, handler: provider.handler)
            let providerAddress = try server.listen(on: .inet(host: "127.0.0.1", port: 0))
            self.provider = provider
            providerServer = server
            tokenCheck = FleetEngineTokenCheck(publicKey: keyPair.publicKey, keyID: keyPair.keyID)
            config = Configuration(
                upstream: try UpstreamURL.parse("http://127.0.0.1:1"),
                providerURL: try ProviderURLTemplate.parse("http://\(providerAddress)/token/{provider}/{type}/{id}"))
            tokenSource = "  stand-in token provider  http://\(providerAddress)  (RS256 JWTs, \(Int(options.tokenLifetime)) s lifetime)"
        }

        fleetEngine = StandInFleetEngine(tokenCheck: tokenCheck, classify: RESTRoute.classify, wallClock: { [clock] in clock.wallNow })
        fleetEngineServer = BufferedHTTPServer(loop: loop, handler: fleetEngine.handler)
        let fleetEngineAddress = try fleetEngineServer.listen(on: .inet(host: "127.0.0.1", port: 0))
        config.upstream = try UpstreamURL.parse("http://\(fleetEngineAddress)")
        config.listen = .inet(host: "127.0.0.1", port: 0)
        sidecar = try Sidecar(configuration: config, loop: loop, logger: logger)
        let sidecarAddress = try sidecar.start()

        output("fleet-token-proxy demo")
        output(tokenSource)
        output("  stand-in Fleet Engine    http://\(fleetEngineAddress)  (checks every token against the call's entity)")
        output("  sidecar                  http://\(sidecarAddress)")
        output("  clients: \(options.vehicles) vehicles updating their location every \(options.updateInterval) s, \(options.trips) trips, \(options.tasks) tasks, over \(options.connections) connections")
        output("")

        guard let sidecarPort = sidecarAddress.split(separator: ":").last.flatMap({ UInt16($0) }) else {
            throw ConfigError("the demo sidecar is not on a TCP port: \(sidecarAddress)")
        }
        client = DemoClient(loop: loop, host: "127.0.0.1", port: sidecarPort, connections: options.connections) { [unowned self] status in
            record(status)
        }
        workload = makeWorkload()
        startedAt = clock.monotonicNow
        coldStart()
        scheduleSteadyLoad()
        scheduleProgress(second: 1)
        loop.schedule(after: options.duration) { [unowned self] in finish() }
        loop.run()
        return summary
    }

    // MARK: Workload

    private func makeWorkload() -> [DemoCall] {
        let p = "demo-project"
        var calls: [DemoCall] = []
        for i in 0..<options.vehicles {
            let id = cFormat("vehicle-%04d", i)
            calls.append(DemoCall(method: "POST", target: "/v1/providers/\(p)/vehicles/\(id):updateLocation",
                                  body: #"{"location":{"latitude":-33.86,"longitude":151.2}}"#))
        }
        for i in 0..<options.trips {
            calls.append(DemoCall(method: "GET", target: "/v1/providers/\(p)/trips/trip-\(i)", body: nil))
        }
        for i in 0..<options.tasks {
            calls.append(DemoCall(method: "PATCH", target: "/v1/providers/\(p)/tasks/task-\(i)?updateMask=taskOutcome",
                                  body: #"{"taskOutcome":"SUCCEEDED"}"#))
            calls.append(DemoCall(method: "GET", target: "/v1/providers/\(p)/taskTrackingInfo/tracking-\(i)", body: nil))
        }
        calls.append(DemoCall(method: "POST", target: "/v1/providers/\(p)/vehicles:search", body: #"{"pickupPoint":{}}"#))
        return calls
    }

    /// Every entity at once, three calls each: the cold start that singleflight is for.
    private func coldStart() {
        for call in workload {
            for _ in 0..<3 { client.send(call) }
        }
    }

    /// Each entity's calls spread over the interval, each repeating every interval.
    private func scheduleSteadyLoad() {
        for (i, call) in workload.enumerated() {
            let offset = options.updateInterval * Double(i) / Double(workload.count)
            repeatCall(call, after: options.updateInterval + offset)
        }
    }

    private func repeatCall(_ call: DemoCall, after delay: Double) {
        loop.schedule(after: delay) { [unowned self] in
            guard !stopping else { return }
            client.send(call)
            repeatCall(call, after: options.updateInterval)
        }
    }

    private func record(_ status: Int) {
        summary.calls += 1
        summary.statusCounts[status, default: 0] += 1
        if (200..<300).contains(status) { summary.answeredOK += 1 } else { summary.failedCalls += 1 }
        if stopping && client.inFlight == 0 { shutDown() }
    }

    private func scheduleProgress(second: Int) {
        loop.schedule(after: Double(second) - (clock.monotonicNow - startedAt)) { [unowned self] in
            guard !stopping else { return }
            let cache = sidecar.cacheStatistics
            let lookups = cache.hits + cache.misses
            let hitRate = lookups == 0 ? 0 : 100 * Double(cache.hits) / Double(lookups)
            output(cFormat("  t=%2ds  calls %6d  ok %6d  rejected by Fleet Engine %d  ",
                           second, summary.calls, summary.answeredOK, fleetEngine.statistics.rejected)
                + (provider == nil ? "tokens signed" : "provider calls")
                + cFormat(" %4d  cache hit rate %5.1f%%", tokensMade, hitRate))
            scheduleProgress(second: second + 1)
        }
    }

    private func finish() {
        stopping = true
        if client.inFlight == 0 { shutDown() }
        // Calls still in flight get a moment; the sidecar's own drain bounds the rest.
        loop.schedule(after: 5) { [unowned self] in shutDown() }
    }

    private var shutDownDone = false

    private func shutDown() {
        guard !shutDownDone else { return }
        shutDownDone = true
        let cache = sidecar.cacheStatistics
        summary.cacheHits = cache.hits
        summary.cacheMisses = cache.misses
        summary.coalesced = cache.coalesced
        summary.providerCalls = tokensMade
        summary.signedLocally = provider == nil
        if let provider {
            summary.entities = provider.fetchesByEntity.count
            summary.maxProviderCallsForOneEntity = provider.fetchesByEntity.values.max() ?? 0
        } else {
            summary.entities = sidecar.cachedEntities
        }
        summary.rejectedByFleetEngine = fleetEngine.statistics.rejected
        summary.acceptedByFleetEngine = fleetEngine.statistics.accepted
        client.close()
        sidecar.drain(timeout: 1) { [unowned self] in
            providerServer?.close()
            googleServer?.close()
            fleetEngineServer.close()
            if let keyDirectory { try? FileManager.default.removeItem(atPath: keyDirectory) }
            loop.stop()
        }
    }

    /// Tokens made so far: the provider's fetches, or the sidecar's signatures.
    private var tokensMade: Int {
        provider?.totalFetches ?? sidecar.cacheStatistics.providerFetches
    }

    /// A fresh folder only this user can enter, for the throwaway key file.
    private static func makePrivateDirectory() throws -> String {
        var template = Array((FileManager.default.temporaryDirectory.path + "/fleet-token-proxy-demo-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw ConfigError("cannot make a folder for the demo's key file") }
        return String(cString: made)
    }

    private static func padded(_ text: String, to width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - text.count))
    }

    /// The summary as a person reads it.
    package static func describe(_ s: DemoSummary, options: DemoOptions) -> [String] {
        let perEntity = s.entities == 0 ? 0 : Double(s.providerCalls) / Double(s.entities)
        var lines = [
            "",
            "Summary",
            cFormat("  calls through the sidecar            %8d", s.calls),
            cFormat("  answered 2xx                         %8d", s.answeredOK),
            cFormat("  failed                               %8d", s.failedCalls),
            cFormat("  accepted by stand-in Fleet Engine    %8d", s.acceptedByFleetEngine),
            cFormat("  rejected by stand-in Fleet Engine    %8d   (must be 0)", s.rejectedByFleetEngine),
            cFormat("  token cache hit rate                 %8.1f%%", 100 * s.cacheHitRate),
            s.signedLocally
                ? "  " + padded("tokens signed with \(s.signedBy)", to: 36)
                    + cFormat(" %8d   for %d entities: %.1f per entity", s.providerCalls, s.entities, perEntity)
                : cFormat("  token provider calls                 %8d   for %d entities: %.1f per entity, at most %d (tokens live %d s)",
                          s.providerCalls, s.entities, perEntity, s.maxProviderCallsForOneEntity, Int(options.tokenLifetime)),
            cFormat("  calls coalesced onto a fetch         %8d", s.coalesced),
        ]
        let others = s.statusCounts.filter { !(200..<300).contains($0.key) }.sorted { $0.key < $1.key }
        if !others.isEmpty {
            lines.append("  non-2xx statuses: " + others.map { "\($0.key)×\($0.value)" }.joined(separator: ", "))
        }
        lines.append("")
        lines.append(s.rejectedByFleetEngine == 0 && s.failedCalls == 0 && s.calls > 0
            ? "OK: every call carried a valid token for its own entity."
            : "FAILED: some calls were rejected or failed.")
        return lines
    }
}

/// One call of the demo workload.
struct DemoCall {
    var method: String
    var target: String
    var body: String?
}
