import Logging

/// Everything `serve` is configured with (docs/CONTRACT.md §6), already parsed and checked.
package struct Configuration: Sendable {
    package var listen: ListenAddress = .inet(host: "127.0.0.1", port: 4180)
    package var allowNonLoopback = false
    package var upstream: UpstreamURL
    package var upstreamCAFile: String?
    /// What REST calls speak to the upstream (`--upstream-protocol`).
    package var upstreamProtocol = UpstreamProtocol.auto
    /// The token provider; nil when `--signer` flags cover every token type.
    package var providerURL: ProviderURLTemplate?
    package var providerHeaders: [HeaderField] = []
    package var providerHeaderFile: String?
    package var providerCAFile: String?
    package var tokenField: String?
    package var expiryField: String?
    package var refreshMargin: Double = 300
    package var minTokenValidity: Double = 60
    package var maxEntities = 100_000
    package var providerConcurrency = 32
    /// Time allowed for one provider fetch, connection included.
    package var providerTimeout: Double = 10
    package var lazyRefresh = false
    /// The longest wait between provider fetches for an entity whose fetches keep failing
    /// (`--provider-backoff-max`); waits start at 1 s and double up to it.
    package var providerBackoffMax: Double = 60
    package var adminListen: ListenAddress?
    package var socketMode: UInt32?
    package var drainTimeout: Double = 10
    /// How long an idle upstream connection, HTTP/2 or HTTP/1.1, is kept open
    /// (`--upstream-idle-timeout`).
    package var upstreamIdleTimeout: Double = Configuration.defaultUpstreamIdleTimeout
    package var logLevel: Logger.Level = .info
    /// One `info` line per call on the `fleet-token-proxy.access` logger (`--access-log`).
    package var accessLog = false
    package var limits = ServerLimits()
    /// `--signer` flags in order (docs/CONTRACT.md §4a); `tokenSources` says which types each takes.
    package var signers: [SignerFlag] = []
    /// `exp − iat` of a token a signer mints (`--signed-token-lifetime`).
    package var signedTokenLifetime: Double = 3600
    /// Where ADC exchanges a key or a refresh token for an access token
    /// (`--oauth-token-endpoint`); a service-account key file's own `token_uri` wins.
    package var oauthTokenEndpoint = try! GoogleEndpoint.parse(GoogleEndpoint.oauthTokenDefault, what: "--oauth-token-endpoint")
    /// The audience of the Google-signed ID token sent to the provider
    /// (`--provider-id-token-audience`): a provider behind Google IAM (Cloud Run, Cloud Functions).
    package var providerIDTokenAudience: String?
    /// The IAM Service Account Credentials API `iam:` signs with (`--iam-endpoint`).
    package var iamEndpoint = try! GoogleEndpoint.parse(GoogleEndpoint.iamDefault, what: "--iam-endpoint")
    /// The environment Application Default Credentials are looked for in
    /// (`GOOGLE_APPLICATION_CREDENTIALS`, `HOME`, `CLOUDSDK_CONFIG`, `GCE_METADATA_HOST`).
    package var credentialEnvironment: [String: String] = [:]

    package init(upstream: UpstreamURL, providerURL: ProviderURLTemplate?) {
        self.upstream = upstream
        self.providerURL = providerURL
    }

    /// The smallest `--max-buffered-bytes` accepted: a budget of only a few reads' worth of
    /// request bytes would refuse ordinary calls, a misconfiguration rather than a bound.
    static let minimumBufferedBytes = 64 * 1024

    /// Ten minutes: a client that calls every few minutes, or after a ten-minute lull, finds
    /// its connection warm (issue 17's idle rows), while a sidecar with no callers still lets
    /// its connections go.
    package static let defaultUpstreamIdleTimeout: Double = 600

    /// Fleet Engine accepts at most an hour (docs/CONTRACT.md §2); under a minute would make
    /// refreshing the main thing a signer does.
    static let signedTokenLifetimes: ClosedRange<Double> = 60...3600

    /// Each token type's source; a type without one, or named twice, is a `ConfigError`.
    func tokenSources() throws(ConfigError) -> TokenSourcePlan {
        try TokenSourcePlan(signers: signers, hasProvider: providerURL != nil)
    }

    /// The checks that span several settings; each failure is one line for stderr.
    /// Whether Application Default Credentials are needed: for `iam:`, `adc` or a provider ID token.
    var usesADC: Bool {
        providerIDTokenAudience != nil || signers.contains { $0.source.usesADC }
    }

    package func validate() throws(ConfigError) {
        if !listen.isLoopback && !allowNonLoopback {
            throw ConfigError("--listen \(listen) is not a loopback address or unix socket; add --allow-non-loopback to listen there")
        }
        if let admin = adminListen, !admin.isLoopback && !allowNonLoopback {
            throw ConfigError("--admin-listen \(admin) is not a loopback address or unix socket; add --allow-non-loopback to listen there")
        }
        if refreshMargin < 0 { throw ConfigError("--refresh-margin must be 0 or more seconds") }
        if minTokenValidity < 0 { throw ConfigError("--min-token-validity must be 0 or more seconds") }
        if maxEntities < 1 { throw ConfigError("--max-entities must be at least 1") }
        if providerConcurrency < 1 { throw ConfigError("--provider-concurrency must be at least 1") }
        if providerTimeout <= 0 { throw ConfigError("--provider-timeout must be more than 0 seconds") }
        if !(providerBackoffMax > 0) { throw ConfigError("--provider-backoff-max must be more than 0 seconds") }
        if drainTimeout < 0 { throw ConfigError("--drain-timeout must be 0 or more seconds") }
        if !(upstreamIdleTimeout > 0) { throw ConfigError("--upstream-idle-timeout must be more than 0 seconds") }
        if !Self.signedTokenLifetimes.contains(signedTokenLifetime) {
            throw ConfigError("--signed-token-lifetime must be 60 to 3600 seconds")
        }
        let plan = try tokenSources()
        if let audience = providerIDTokenAudience {
            guard plan.usesProvider else {
                throw ConfigError("--provider-id-token-audience authenticates to the token provider, which no token type uses")
            }
            guard !audience.isEmpty, audience.utf8.count <= 2048, audience.utf8.allSatisfy(ASCII.isVisible) else {
                throw ConfigError("--provider-id-token-audience must be a URL or name of visible ASCII (the provider's URL, as Cloud Run expects)")
            }
            if providerHeaders.contains(where: { $0.name.lowercased() == "authorization" }) {
                throw ConfigError("--provider-id-token-audience sends its own Authorization header to the provider; drop the --provider-header Authorization")
            }
        }
        if limits.maxBufferedBytes < Self.minimumBufferedBytes {
            throw ConfigError("--max-buffered-bytes must be at least \(Self.minimumBufferedBytes)")
        }
    }
}

/// One `Name: value` header the sidecar sends to the token provider.
package struct HeaderField: Sendable, Equatable {
    package var name: String
    package var value: String
    package init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}
