/// The metadata server's token (docs/CONTRACT.md §4a): `GET
/// /computeMetadata/v1/instance/service-accounts/default/token`, or `.../identity?audience=AUD
/// &format=full` for an ID token, asked with `Metadata-Flavor: Google`. Every answer must say
/// `Metadata-Flavor: Google` too, as Google's libraries require: a server at
/// `GCE_METADATA_HOST` (or the link-local address) that does not is not Google's, and what it
/// answers is not used (502, §5). Never sent a quota project: the token is the host's own.
final class MetadataServerExchange: TokenExchange {
    static let tokenPath = "/computeMetadata/v1/instance/service-accounts/default/token"
    static let identityPath = "/computeMetadata/v1/instance/service-accounts/default/identity"
    static let flavorField = "Metadata-Flavor"

    let endpoint: GoogleEndpoint
    private let host: String
    private let kind: ADCTokenSource.Kind
    private let target: String
    private let client: EndpointClient
    private let clock: TokenClock

    init(host: String, kind: ADCTokenSource.Kind, context: TokenExchangeContext) throws(ConfigError) {
        self.host = host
        self.kind = kind
        clock = context.clock
        endpoint = try GoogleEndpoint.parse("http://" + host, what: "metadata server host")
        switch kind {
        case .access: target = endpoint.target(Self.tokenPath)
        case .identity(let audience):
            target = endpoint.target(Self.identityPath + "?audience=" + String(decoding: FormEncoding.component(audience), as: UTF8.self) + "&format=full")
        }
        client = EndpointClient(loop: context.loop, endpoint: endpoint, name: "the metadata server", tls: nil, timeout: context.timeout,
                                keptFields: [Self.flavorField], logger: context.logger)
    }

    func fetch(_ completion: @escaping (Result<AccessToken, ProxyFailure>) -> Void) {
        let headers = [HeaderField(name: Self.flavorField, value: "Google"), HeaderField(name: "Accept", value: "application/json")]
        client.send(method: "GET", target: target, headers: headers) { [kind, host, clock, name = client.name] result in
            completion(result.flatMap { answer in
                guard Self.saysGoogle(answer) else {
                    return .failure(.providerAnswerUnusable(
                        "\(name) at \(host) answered without \(Self.flavorField): Google, so it is not Google's metadata server"))
                }
                switch kind {
                case .access: return GoogleAnswer.interpret(answer, from: name, AccessTokenAnswer.parse)
                case .identity:
                    return GoogleAnswer.interpret(answer, from: name) { IDTokenAnswer.parse($0, from: $1, wallNow: clock.wallNow) }
                }
            })
        }
    }

    /// Whether the answer names Google's metadata server (the value exactly, as Google's
    /// libraries compare it).
    static func saysGoogle(_ answer: EndpointClient.Answer) -> Bool {
        answer.fields[flavorField] == "Google"
    }

    func close() { client.close() }
}
