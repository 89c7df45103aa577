/// An X.509 `external_account`'s certificate, as its files hold it (docs/CONTRACT.md §4a): the
/// certificate and key the certificate config names, and the optional trust chain. Read at
/// start (a missing, unreadable or mismatched file stops start-up) and again at each STS
/// exchange, as Google's libraries read them at each refresh, so a renewed certificate is used
/// from the next exchange on. The subject token is built from that same read: the JSON array of
/// the base64 DER certificates, the leaf first, then the trust chain's (the chain's first
/// certificate left out when it is the leaf; the leaf anywhere else in it is an error), as the
/// libraries build it. STS and IAM are called over mutual TLS presenting the certificate: the
/// clients here present the one last read, and a renewed one gets new clients (with a new
/// session cache), so no connection or session made under the old certificate carries on.
///
/// Loop-bound. The key is never shown; errors name files.
final class WorkloadCertificate {
    private let source: CertificateCredentialSource
    private let files: (certificate: String, key: String)
    private let google: TLSContext
    private let context: TokenExchangeContext
    private var certificate: ClientCertificate
    private var tls: TLSContext
    private var clients: [String: EndpointClient] = [:]
    /// Clients of an older certificate, closed once what they carry has had its time.
    private var retired: [ObjectIdentifier: EndpointClient] = [:]

    /// Reads the files now; `file` names the ADC file in the start-up line.
    init(source: CertificateCredentialSource, file: String, context: TokenExchangeContext) throws(ConfigError) {
        guard let certificateFile = source.certificatePath, let keyFile = source.keyPath, let google = context.tls else {
            throw ConfigError("credentials file \(file): its X.509 certificate config was not read")
        }
        (self.source, self.context, self.google) = (source, context, google)
        files = (certificateFile, keyFile)
        do {
            certificate = try ClientCertificate.load(certificateFile: certificateFile, keyFile: keyFile)
        } catch {
            throw ConfigError("credentials file \(file) takes its X.509 certificate from \(source.configFile ?? "its certificate config"): \(error.message)")
        }
        tls = google.presenting(certificate)
        if case .failure(let failure) = Self.subjectToken(leaf: certificate.leafDER, trustChainPath: source.trustChainPath) {
            throw ConfigError("credentials file \(file): \(failure.message)")
        }
    }

    /// Reads the files again: the subject token of the certificate they hold now, which the
    /// clients present from now on. Unreadable is 503, unusable 502 (§5's rows).
    func read() -> Result<String, ProxyFailure> {
        do {
            let loaded = try ClientCertificate.load(certificateFile: files.certificate, keyFile: files.key)
            if loaded.leafDER != certificate.leafDER { renewed(loaded) }
        } catch {
            return .failure(error.kind == .unreadable ? .providerUnavailable(error.message) : .providerAnswerUnusable(error.message))
        }
        return Self.subjectToken(leaf: certificate.leafDER, trustChainPath: source.trustChainPath)
    }

    /// A client of `endpoint` presenting the certificate: the same one until it is renewed.
    func client(for endpoint: GoogleEndpoint, name: String) -> EndpointClient {
        let key = "\(endpoint) \(name)"
        if let client = clients[key] { return client }
        let client = EndpointClient(loop: context.loop, endpoint: endpoint, name: name, tls: tls, timeout: context.timeout, logger: context.logger)
        clients[key] = client
        return client
    }

    private func renewed(_ loaded: ClientCertificate) {
        certificate = loaded
        tls = google.presenting(loaded)
        // A call on an old client (an IAM call while STS is asked again) finishes first: an
        // exchange, its 401 retry and the fresh token it waits for take three timeouts at most.
        for client in clients.values {
            let id = ObjectIdentifier(client)
            retired[id] = client
            _ = context.loop.schedule(after: 3 * context.timeout + 1) { [weak self] in self?.retired.removeValue(forKey: id)?.close() }
        }
        clients = [:]
    }

    /// The subject token for `leaf` and the trust chain file, as Google's libraries build it.
    static func subjectToken(leaf: [UInt8], trustChainPath: String?) -> Result<String, ProxyFailure> {
        var chain: [[UInt8]] = []
        if let trustChainPath, !trustChainPath.isEmpty {
            guard let bytes = ApplicationDefaultCredentials.readFile(trustChainPath) else {
                return .failure(.providerUnavailable("the trust chain file \(trustChainPath) cannot be read (or is larger than \(ApplicationDefaultCredentials.maximumFileBytes) bytes)"))
            }
            // As Google's Java library: a file with something in it must hold certificates.
            let blank = bytes.allSatisfy { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
            guard let certificates = X509DER.certificates(pem: bytes), !certificates.isEmpty || blank else {
                return .failure(.providerAnswerUnusable("the trust chain file \(trustChainPath) is not PEM certificates"))
            }
            chain = certificates
        }
        return subjectToken(leaf: leaf, chain: chain, trustChainPath: trustChainPath ?? "")
    }

    /// The JSON array of base64 DER: `leaf`, then `chain` less a first certificate that is the leaf.
    static func subjectToken(leaf: [UInt8], chain: [[UInt8]], trustChainPath: String) -> Result<String, ProxyFailure> {
        var certificates = [leaf]
        for (index, certificate) in chain.enumerated() where !(index == 0 && certificate == leaf) {
            guard certificate != leaf else {
                return .failure(.providerAnswerUnusable("the trust chain file \(trustChainPath) has the leaf certificate after its start (it may come first, or not at all)"))
            }
            certificates.append(certificate)
        }
        return .success(JSONish.array(certificates.map { .string(STSExchange.base64($0)) }).jsonText)
    }

    func close() {
        clients.values.forEach { $0.close() }
        retired.values.forEach { $0.close() }
        clients = [:]
        retired = [:]
    }
}
