#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging

/// The whole sidecar on one event loop: client listener, token cache, provider client and
/// upstream pool, built from a `Configuration`.
package final class Sidecar {
    package let configuration: Configuration
    private let loop: EventLoop
    private let logger: Logger
    private let core: ProxyCore
    private let server: ProxyServer
    private let provider: ProviderClient?
    /// One per `--signer`, in flag order; they share `signingWorkers`.
    private let signers: [KeyFileSigner]
    private let signingWorkers: WorkerPool?
    /// The ADC access token, when a `--signer` needs it.
    private let accessTokens: ADCTokenSource?
    /// IAM's client, when an `iam:` signer uses it.
    private let iam: EndpointClient?
    private let cache: TokenCache
    private let metrics: ProxyMetrics
    private var admin: AdminServer?
    private var draining = false

    /// Builds every part; fails (for a clear start-up error) on an unreadable CA or header file.
    package init(configuration: Configuration, loop: EventLoop, logger: Logger, clock: TokenClock = SystemClock()) throws {
        self.configuration = configuration
        self.loop = loop
        self.logger = logger
        // Metrics cost a little on every call; without an admin listener nobody can read them.
        let metrics = configuration.adminListen != nil ? ProxyMetrics.bootstrapped() : ProxyMetrics()
        self.metrics = metrics
        let tls = try Self.makeTLSContexts(configuration, metrics: metrics)
        let sources = try Self.makeTokenSources(configuration, tls: tls, loop: loop, clock: clock, logger: logger, metrics: metrics)
        provider = sources.provider
        accessTokens = sources.accessTokens
        iam = sources.iam
        signers = sources.signers
        signingWorkers = sources.workers
        cache = TokenCache(
            fetcher: sources.fetcher, clock: clock,
            timing: TokenTiming(refreshMargin: configuration.refreshMargin, minValidity: configuration.minTokenValidity),
            maxEntities: configuration.maxEntities,
            scheduler: configuration.lazyRefresh ? nil : loop,
            backoff: BackoffPolicy(maximum: configuration.providerBackoffMax))
        // Enough upstream connections for every call a loop can usefully keep in flight.
        var upstreamLimits = ClientLimits()
        upstreamLimits.idleTimeout = configuration.upstreamIdleTimeout
        let upstream = HTTP1UpstreamPool(loop: loop, origin: Origin(configuration.upstream), tls: tls.upstream,
                                      maxConnections: 256, limits: upstreamLimits, metrics: metrics, logger: logger)
        let upstreamH2 = HTTP2UpstreamPool(loop: loop, origin: Origin(configuration.upstream), tls: tls.upstreamH2,
                                           idleTimeout: configuration.upstreamIdleTimeout,
                                           answerTimeout: upstreamLimits.responseTimeout, metrics: metrics,
                                           upstreamProtocol: configuration.upstreamProtocol, logger: logger)
        // REST moving to HTTP/1.1 makes that pool one that carries calls: it is kept warm too.
        upstreamH2.restFellBackToHTTP1 = { [unowned upstream] in upstream.warmUp() }
        core = ProxyCore(loop: loop, cache: cache, upstream: upstream, upstreamH2: upstreamH2, limits: configuration.limits,
                         clock: clock, logger: logger,
                         metrics: metrics, accessLogger: configuration.accessLog ? LogSetup.makeAccessLogger() : nil,
                         quotaProject: sources.fetcher.quotaProject(for:))
        server = ProxyServer(core: core)
        if configuration.adminListen != nil {
            admin = AdminServer(loop: loop, metrics: metrics, probes: AdminServer.Probes(
                notReadyReason: { [unowned self] in notReadyReason },
                beforeScrape: { [unowned self] in
                    metrics.observeCache(cache.statistics, entities: cache.count)
                    metrics.observeBufferBudget(used: core.bufferBudget.used, limit: core.bufferBudget.limit)
                }))
        }
    }

    deinit {
        // The workers hold the pool until told to stop; a sidecar dropped without a drain.
        signingWorkers?.stop()
    }

    /// The client TLS contexts: upstream (HTTP/1.1, offering only "http/1.1" by ALPN, and
    /// HTTP/2, which must agree on "h2", offering "http/1.1" too when the answer decides REST's
    /// route: `RESTUpstreamRoute`; an http:// upstream speaks h2c with prior knowledge) and
    /// provider, each counting its handshakes.
    private struct TLSContexts {
        var upstream: TLSContext?
        var upstreamH2: TLSContext?
        var provider: TLSContext?
        /// Google's credential endpoints (ADC), with the system's CAs.
        var google: TLSContext?
    }

    private static func makeTLSContexts(_ configuration: Configuration, metrics: ProxyMetrics) throws -> TLSContexts {
        // One trust store per source of CAs, shared by the contexts that use it: the system
        // store is parsed once, not once per context, and here rather than on the event loop
        // when the first call needs it.
        let systemTrust = TrustStore.system()
        let upstreamTrust = configuration.upstream.scheme == .https
            ? try TrustStore.file(configuration.upstreamCAFile, or: systemTrust) : nil
        let providerTrust = configuration.providerURL?.scheme == .https
            ? try TrustStore.file(configuration.providerCAFile, or: systemTrust) : nil
        let usesADC = configuration.usesADC
        if upstreamTrust === systemTrust || providerTrust === systemTrust || usesADC { try systemTrust.load() }
        let route = RESTUpstreamRoute(configuration.upstreamProtocol, tls: upstreamTrust != nil)
        return TLSContexts(
            upstream: upstreamTrust.map {
                TLSContext.client(trust: $0, alpn: RESTUpstreamRoute.http1PoolALPN) {
                    metrics.tlsHandshakeFinished(peer: .upstream, resumed: $0)
                }
            },
            upstreamH2: upstreamTrust.map {
                TLSContext.client(trust: $0, alpn: route.http2PoolALPN) { metrics.tlsHandshakeFinished(peer: .upstream, resumed: $0) }
            },
            provider: providerTrust.map {
                TLSContext.client(trust: $0) { metrics.tlsHandshakeFinished(peer: .provider, resumed: $0) }
            },
            google: usesADC ? TLSContext.client(trust: systemTrust) { metrics.tlsHandshakeFinished(peer: .google, resumed: $0) } : nil)
    }

    /// Where each token type's tokens come from (docs/CONTRACT.md §4a): the provider for the
    /// types no `--signer` names, a key-file signer (on a shared worker pool) or the ADC access
    /// token for the others.
    private struct Sources {
        var provider: ProviderClient?
        var signers: [KeyFileSigner]
        var workers: WorkerPool?
        var accessTokens: ADCTokenSource?
        var iam: EndpointClient?
        var fetcher: TokenSources
    }

    private static func makeTokenSources(
        _ configuration: Configuration, tls: TLSContexts, loop: EventLoop, clock: TokenClock, logger: Logger, metrics: ProxyMetrics
    ) throws -> Sources {
        let providerTLS = tls.provider
        let plan = try configuration.tokenSources()
        var providerClient: ProviderClient?
        if plan.usesProvider, let template = configuration.providerURL {
            var headers = configuration.providerHeaders
            if let file = configuration.providerHeaderFile {
                headers += try Self.readHeaderFile(file)
            }
            providerClient = ProviderClient(
                loop: loop, template: template, tls: providerTLS, headers: headers,
                tokenField: configuration.tokenField, expiryField: configuration.expiryField,
                timeout: configuration.providerTimeout, concurrency: configuration.providerConcurrency,
                clock: clock, logger: logger, metrics: metrics)
        }
        var accessTokens: ADCTokenSource?
        if configuration.usesADC {
            let credentials = try ApplicationDefaultCredentials.find(environment: configuration.credentialEnvironment)
            func source(_ kind: ADCTokenSource.Kind) throws -> ADCTokenSource {
                try ADCTokenSource(
                    credentials: credentials, kind: kind, tokenEndpoint: configuration.oauthTokenEndpoint, loop: loop, tls: tls.google,
                    timeout: configuration.providerTimeout, backoff: BackoffPolicy(maximum: configuration.providerBackoffMax),
                    minValidity: configuration.minTokenValidity, clock: clock, logger: logger)
            }
            if configuration.signers.contains(where: { $0.source.usesADC }) { accessTokens = try source(.access) }
            if let audience = configuration.providerIDTokenAudience { providerClient?.idTokens = try source(.identity(audience: audience)) }
            logger.notice("application default credentials found", metadata: [
                "credentials": "\(credentials.origin)",
                "token_endpoint": "\((accessTokens ?? providerClient?.idTokens).map { "\($0.endpoint)" } ?? "none")",
            ])
        }
        let needsWorkers = configuration.signers.contains { if case .keyFile = $0.source { true } else { false } }
        let workers = needsWorkers ? WorkerPool(threads: WorkerPool.defaultThreads, queueLimit: Self.signingQueueLimit) : nil
        var keyFileSigners: [KeyFileSigner] = []
        var fetchers: [TokenFetcher] = []
        // One client for every iam: signer: they share IAM's connections.
        var iam: EndpointClient?
        for flag in configuration.signers {
            switch flag.source {
            case .adc:
                fetchers.append(AccessTokenSigner(source: accessTokens!, clock: clock))
            case .iam(let account):
                let client = iam ?? EndpointClient(
                    loop: loop, endpoint: configuration.iamEndpoint, name: "IAM signJwt", tls: tls.google,
                    timeout: configuration.providerTimeout, maxConnections: configuration.providerConcurrency, logger: logger)
                iam = client
                fetchers.append(IAMSigner(account: account, accessTokens: accessTokens!, endpoint: configuration.iamEndpoint, client: client,
                                          lifetime: configuration.signedTokenLifetime, clock: clock))
            case .keyFile(let path):
                do {
                    let signer = try KeyFileSigner(
                        path: path, loop: loop, workers: workers!, lifetime: configuration.signedTokenLifetime,
                        clock: clock, logger: logger)
                    keyFileSigners.append(signer)
                    fetchers.append(signer)
                } catch {
                    workers?.stop()
                    throw error
                }
            }
        }
        let fetcher = TokenSources { [fetchers, providerClient] type in
            switch plan.sources[type]! {
            case .provider: providerClient!
            case .signer(let index): fetchers[index]
            }
        }
        return Sources(provider: providerClient, signers: keyFileSigners, workers: workers, accessTokens: accessTokens,
                       iam: iam, fetcher: fetcher)
    }

    /// Binds the configured listener (and the admin listener); returns the bound address (real
    /// port for port 0).
    @discardableResult
    package func start() throws -> String {
        let bound = try server.listen(on: configuration.listen, socketMode: configuration.socketMode)
        var metadata: Logger.Metadata = [
            "address": "\(bound)", "upstream": "\(configuration.upstream)", "provider": "\(configuration.providerURL.map { "\($0)" } ?? "none")",
        ]
        metadata["admin"] = try startAdmin().map { "\($0)" }
        warnAboutTheHTTP2Library()
        logger.notice("listening", metadata: metadata)
        warmUpstreamSoon()
        return bound
    }

    /// Serves on sockets the service manager opened (socket activation) instead of binding
    /// `--listen`; returns their addresses, comma-separated. Refuses (`ConfigError`) a socket
    /// not on loopback, as `--listen` does, unless `allowNonLoopback`.
    @discardableResult
    package func start(adopting sockets: [ActivatedSocket]) throws -> String {
        try SocketActivation.checkLoopback(sockets, allowNonLoopback: configuration.allowNonLoopback)
        var addresses: [String] = []
        for socket in sockets {
            let address = SocketActivation.localAddress(of: socket.fd)
            try server.adopt(fd: socket.fd, description: address)
            addresses.append(address)
        }
        let bound = addresses.joined(separator: ",")
        var metadata: Logger.Metadata = [
            "address": "\(bound)", "activation": "socket", "names": "\(sockets.map(\.name).joined(separator: ","))",
            "upstream": "\(configuration.upstream)", "provider": "\(configuration.providerURL.map { "\($0)" } ?? "none")",
        ]
        metadata["admin"] = try startAdmin().map { "\($0)" }
        warnAboutTheHTTP2Library()
        logger.notice("listening", metadata: metadata)
        warmUpstreamSoon()
        return bound
    }

    /// Once the loop runs (after READY is sent, which never waits for it): one connection to the
    /// upstream for each pool that will carry calls, so the first calls find them open. The
    /// HTTP/1.1 pool only while REST goes over HTTP/1.1 (with `auto` on `https://` REST starts
    /// on HTTP/2: `RESTUpstreamRoute`); an HTTP/2 connection for `https://`, or when REST is
    /// pinned to HTTP/2. An `http://` upstream otherwise may speak HTTP/1.1 only, and would see
    /// an unasked h2c preface as a bad request: its HTTP/2 connection waits for a call.
    private func warmUpstreamSoon() {
        let restOverHTTP2 = core.restOverHTTP2
        let http2 = configuration.upstream.scheme == .https || restOverHTTP2
        _ = loop.schedule(after: 0) { [core] in
            if http2 { core.upstreamH2.warmUp() }
            if !restOverHTTP2 { core.upstream.warmUp() }
        }
    }

    /// Once serving (a start that fails prints only its reason): the loaded nghttp2's own
    /// version may not show the HTTP/2 fixes the sidecar relies on (`H2LibraryVersion`).
    private func warnAboutTheHTTP2Library() {
        if let warning = H2LibraryVersion.running().warning { logger.warning("\(warning)") }
    }

    /// Binds the admin listener, if configured; returns its address.
    private func startAdmin() throws -> String? {
        guard let admin, let address = configuration.adminListen else { return nil }
        return try admin.listen(on: address)
    }

    /// The admin listener's bound address, if it is on.
    var adminAddress: String? { admin?.boundDescription }

    /// Nil when the sidecar takes calls; otherwise why not (`/readyz`).
    var notReadyReason: String? {
        if draining { return "draining" }
        if !server.isListening { return "not listening" }
        return nil
    }

    /// Re-reads `--provider-header-file` (SIGHUP): the next provider request uses it; cached
    /// tokens and connections are kept. A bad file keeps the old headers.
    package func reloadProviderHeaders() {
        guard let provider, let file = configuration.providerHeaderFile else { return }
        do {
            provider.headers = configuration.providerHeaders + (try Self.readHeaderFile(file))
            logger.notice("provider headers reloaded", metadata: ["file": "\(file)", "count": "\(provider.headers.count)"])
        } catch {
            logger.error("provider header file not reloaded; keeping the previous headers", metadata: ["error": "\(error)"])
        }
    }

    /// Re-reads every `--signer key-file:` (SIGHUP): the next token is signed with the new key;
    /// a bad file keeps the previous key, with one error line.
    package func reloadSigningKeys() {
        signers.forEach { $0.reload() }
    }

    /// Tokens that may wait for a signing worker before more are refused (503): a cold start
    /// of this many entities is signed without a refusal, in a few MB at most.
    static let signingQueueLimit = 16_384

    /// Stops accepting, lets calls in flight finish for up to `timeout` seconds, then closes
    /// what is left and calls `done`.
    package func drain(timeout: Double, done: @escaping () -> Void) {
        draining = true
        var finished = false
        let finish = { [self] in
            guard !finished else { return }
            finished = true
            server.closeAll()
            provider?.close()
            provider?.idTokens?.close()
            accessTokens?.close()
            iam?.close()
            signingWorkers?.stop()
            core.upstream.close()
            core.upstreamH2.close()
            // Last: /readyz says 503 for the whole drain.
            admin?.close()
            done()
        }
        let timer = loop.schedule(after: timeout) {
            self.logger.warning("drain timeout reached; closing calls still in flight")
            finish()
        }
        server.drain {
            timer.cancel()
            finish()
        }
    }

    package var cacheStatistics: TokenCacheStatistics { cache.statistics }
    package var cachedEntities: Int { cache.count }

    static func readHeaderFile(_ path: String) throws -> [HeaderField] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigError("cannot read --provider-header-file \(path)")
        }
        let text = String(decoding: data, as: UTF8.self)
        return try HeaderLine.parseFile(contents: text).map { HeaderField(name: $0.name, value: $0.value) }
    }
}
