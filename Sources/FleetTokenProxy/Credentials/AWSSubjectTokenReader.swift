/// The subject token of an AWS host (docs/CONTRACT.md §4a, `environment_id` aws1), as Google's
/// libraries make it: the region and credentials from the environment or the instance metadata
/// service (with an IMDSv2 session token when the file names its URL; the region is the
/// availability zone less its last letter; the credentials are the role's that
/// `security-credentials` names), then a `GetCallerIdentity` request to the regional AWS STS
/// signed with SigV4 and never sent: its URL, method and header fields (with
/// `x-goog-cloud-target-resource` = the pool's audience) as JSON, percent-encoded. The metadata
/// service's refusals are 403 with its own text, unreachable 503. The secret key, the session
/// token and the signed request are never shown.
///
/// Loop-bound: completions run on the loop thread.
final class AWSSubjectTokenReader {
    static let sessionTokenTTL = "300"
    static let sessionTokenField = "X-aws-ec2-metadata-token"
    static let name = "the AWS metadata service"

    private let source: AWSCredentialSource
    private let audience: String
    private let context: TokenExchangeContext
    private var clients: [String: EndpointClient] = [:]

    init(source: AWSCredentialSource, audience: String, file: String, context: TokenExchangeContext) throws(ConfigError) {
        self.source = source
        self.audience = audience
        self.context = context
        for url in [source.regionURL, source.credentialsURL, source.sessionTokenURL].compactMap({ $0 }) {
            _ = try Self.split(url, what: "an AWS credential_source URL of \(file)")
        }
        _ = try Self.split(source.verificationURL.replacing("{region}", with: "us-east-1"),
                           what: "credential_source.regional_cred_verification_url of \(file)")
        if source.environmentRegion == nil && source.regionURL == nil {
            throw ConfigError("credentials file \(file): no AWS region (AWS_REGION, AWS_DEFAULT_REGION or credential_source.region_url)")
        }
        if source.environmentCredentials == nil && source.credentialsURL == nil {
            throw ConfigError("credentials file \(file): no AWS credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or credential_source.url)")
        }
    }

    func read(_ completion: @escaping (Result<String, ProxyFailure>) -> Void) {
        let needsMetadata = source.environmentRegion == nil || source.environmentCredentials == nil
        guard needsMetadata, let tokenURL = source.sessionTokenURL else { return withSession(nil, completion) }
        get(tokenURL, method: "PUT", headers: [HeaderField(name: "X-aws-ec2-metadata-token-ttl-seconds", value: Self.sessionTokenTTL)]) {
            [self] result in
            switch result {
            case .failure(let failure): completion(.failure(failure))
            case .success(let token): withSession(String(decoding: token, as: UTF8.self), completion)
            }
        }
    }

    private func withSession(_ sessionToken: String?, _ completion: @escaping (Result<String, ProxyFailure>) -> Void) {
        let headers = sessionToken.map { [HeaderField(name: Self.sessionTokenField, value: $0)] } ?? []
        region(headers) { [self] region in
            switch region {
            case .failure(let failure): completion(.failure(failure))
            case .success(let region):
                credentials(headers) { [self] credentials in
                    completion(credentials.flatMap { signedRequest(region: region, credentials: $0) })
                }
            }
        }
    }

    private func region(_ headers: [HeaderField], _ completion: @escaping (Result<String, ProxyFailure>) -> Void) {
        if let region = source.environmentRegion { return completion(.success(region)) }
        guard let url = source.regionURL else { return }
        get(url, headers: headers) { result in
            completion(result.flatMap { zone in
                // An availability zone (`us-east-1b`) less its letter is the region.
                let text = String(decoding: zone, as: UTF8.self)
                guard text.utf8.count >= 2, text.utf8.count <= 64, text.utf8.allSatisfy({ ASCII.isVisible($0) }) else {
                    return .failure(.providerAnswerUnusable("\(Self.name) answered no availability zone"))
                }
                return .success(String(text.dropLast()))
            })
        }
    }

    private func credentials(_ headers: [HeaderField], _ completion: @escaping (Result<SigV4.Credentials, ProxyFailure>) -> Void) {
        if let credentials = source.environmentCredentials { return completion(.success(credentials)) }
        guard let url = source.credentialsURL else { return }
        get(url, headers: headers) { [self] role in
            switch role {
            case .failure(let failure): completion(.failure(failure))
            case .success(let name):
                let role = String(decoding: name, as: UTF8.self)
                guard !role.isEmpty, role.utf8.count <= 128, role.utf8.allSatisfy(ASCII.isVisible), !role.contains("/") else {
                    return completion(.failure(.providerAnswerUnusable("\(Self.name) answered no role name")))
                }
                get(url + "/" + role, headers: headers) { result in
                    completion(result.flatMap { AWSCredentialsAnswer.parse($0, from: Self.name) })
                }
            }
        }
    }

    /// The subject token: the signed request, serialized as Google's libraries serialize it.
    func signedRequest(region: String, credentials: SigV4.Credentials) -> Result<String, ProxyFailure> {
        let url = source.verificationURL.replacing("{region}", with: region)
        guard let (origin, path, query) = try? Self.split(url, what: "the AWS verification URL") else {
            return .failure(.providerAnswerUnusable("the AWS region \(AccessTokenAnswer.printable(region)) makes no verification URL"))
        }
        var fields = SigV4.sign(method: "POST", host: origin.host, path: path, query: query, credentials: credentials, region: region,
                                amzDate: SigV4.amzDate(context.clock.wallNow))
        fields.append((key: "x-goog-cloud-target-resource", value: audience))
        let request = JSONish.object([
            "url": .string(url), "method": .string("POST"),
            "headers": .array(fields.map { .object(["key": .string($0.key), "value": .string($0.value)]) }),
        ])
        return .success(String(decoding: FormEncoding.component(request.jsonText), as: UTF8.self))
    }

    /// A metadata-service URL's origin, path and query.
    static func split(_ url: String, what: String) throws(ConfigError) -> (URLOrigin, path: String, query: String) {
        let (origin, rest) = try URLOrigin.parse(url, what: what)
        if rest.contains("#") { throw ConfigError("\(what) must not have a fragment") }
        let parts = rest.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        return (origin, String(parts.first ?? ""), parts.count > 1 ? String(parts[1]) : "")
    }

    private func get(_ url: String, method: String = "GET", headers: [HeaderField],
                     _ completion: @escaping (Result<[UInt8], ProxyFailure>) -> Void) {
        guard let (origin, path, query) = try? Self.split(url, what: "an AWS URL") else { return }
        let key = "\(origin.scheme)://\(origin.hostHeader)"
        let client = clients[key] ?? EndpointClient(
            loop: context.loop, origin: Origin(scheme: origin.scheme, host: origin.host, port: origin.port, hostHeader: origin.hostHeader),
            name: Self.name, tls: origin.scheme == .https ? context.tls : nil, timeout: context.timeout, maxConnections: 1,
            maxBody: EndpointClient.googleMaxBody, logger: context.logger)
        clients[key] = client
        let target = (path.isEmpty ? "/" : path) + (query.isEmpty ? "" : "?" + query)
        client.send(method: method, target: target, headers: headers) { result in
            completion(result.flatMap { GoogleAnswer.interpret($0, from: Self.name) { body, _ in .success(body) } })
        }
    }

    func close() { clients.values.forEach { $0.close() } }
}
