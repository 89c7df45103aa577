/// The STS token exchange of workload identity federation (docs/CONTRACT.md §4a, RFC 8693):
/// the subject token, read afresh, is posted to the file's `token_url` with its `audience` (the
/// pool provider), `subject_token_type`, scope cloud-platform and the requested access-token
/// type; a workforce pool's user project goes in `options` unless the pool's own client
/// authenticates (HTTP Basic). STS answers RFC 6749's shape: a refusal (`invalid_grant`, …) is
/// 403 with its own `error` text, an unreachable STS 503. Never sent a quota project: the
/// exchange makes the token. The subject token is never shown. An X.509 source's exchange goes
/// over mutual TLS, presenting the certificate its subject token was built from.
final class STSExchange: TokenExchange {
    static let grantType = "urn:ietf:params:oauth:grant-type:token-exchange"
    static let requestedTokenType = "urn:ietf:params:oauth:token-type:access_token"

    let endpoint: GoogleEndpoint
    private let account: ExternalAccountCredentials
    private let reader: SubjectTokenReader
    private let client: EndpointClient
    /// An X.509 source's certificate: the exchange presents it.
    private let certificate: WorkloadCertificate?

    init(account: ExternalAccountCredentials, file: String, context: TokenExchangeContext) throws(ConfigError) {
        self.account = account
        endpoint = try GoogleEndpoint.parse(account.tokenURL, what: "token_url of \(file)")
        certificate = context.certificate
        if certificate != nil && endpoint.scheme != .https {
            throw ConfigError("credentials file \(file) has an X.509 credential_source and a token_url that is not https: its exchange goes over mutual TLS")
        }
        reader = try SubjectTokenReader(account: account, file: file, context: context)
        client = EndpointClient(loop: context.loop, endpoint: endpoint, name: "STS", tls: context.tls, timeout: context.timeout,
                                logger: context.logger)
    }

    func fetch(_ completion: @escaping (Result<AccessToken, ProxyFailure>) -> Void) {
        reader.read { [self] subject in
            switch subject {
            case .failure(let failure):
                completion(.failure(failure))
            case .success(let token):
                // Over mutual TLS with the certificate the subject token was just built from.
                let client = certificate?.client(for: endpoint, name: self.client.name) ?? self.client
                client.send(method: "POST", target: endpoint.target(""), headers: headers, body: FormEncoding.body(form(subjectToken: token))) {
                    [name = client.name] result in
                    completion(result.flatMap { GoogleAnswer.interpret($0, from: name, AccessTokenAnswer.parse) })
                }
            }
        }
    }

    /// RFC 8693 §2.1's request, as Google's STS takes it.
    func form(subjectToken: String) -> [(String, String)] {
        var form = [
            ("grant_type", Self.grantType), ("audience", account.audience), ("scope", ADCTokenSource.scope),
            ("requested_token_type", Self.requestedTokenType), ("subject_token", subjectToken),
            ("subject_token_type", account.subjectTokenType),
        ]
        // A pool client's authentication names the project itself, as in Google's libraries.
        if let project = account.workforcePoolUserProject, account.clientID == nil {
            form.append(("options", JSONish.object(["userProject": .string(project)]).jsonText))
        }
        return form
    }

    var headers: [HeaderField] {
        var headers = OAuthTokenExchange.formHeaders
        if let id = account.clientID, let secret = account.clientSecret {
            headers.append(HeaderField(name: "Authorization", value: "Basic " + Self.base64(Array("\(id):\(secret)".utf8))))
        }
        return headers
    }

    /// RFC 4648 §4 base64 (HTTP Basic), from the URL-safe alphabet the code already has.
    static func base64(_ bytes: [UInt8]) -> String {
        var text = String(Base64URL.encode(bytes).map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        while text.utf8.count % 4 != 0 { text += "=" }
        return text
    }

    func close() {
        client.close()
        reader.close()
        certificate?.close()
    }
}
