#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Gets an `external_account`'s subject token for each STS exchange (docs/CONTRACT.md §4a):
/// the file is read again every time, so a token the identity provider rotated (a Kubernetes
/// projected token, a CI job's) is the one sent, as Google's libraries do; the URL is asked
/// every time with its headers. Never kept, never shown: failures name the place only.
///
/// Loop-bound: completions run on the loop thread. A file is a few kilobytes, read on the loop
/// once an hour.
final class SubjectTokenReader {
    /// A subject token file is a few kilobytes; more is not one.
    static let maximumFileBytes = 64 * 1024

    private let source: SubjectTokenSource
    private let client: EndpointClient?
    private let target: String

    init(source: SubjectTokenSource, file: String, context: TokenExchangeContext) throws(ConfigError) {
        self.source = source
        switch source {
        case .file:
            client = nil
            target = ""
        case .url(let url, _, _):
            let (origin, rest) = try URLOrigin.parse(url, what: "credential_source.url of \(file)")
            if rest.contains("#") { throw ConfigError("credential_source.url of \(file) must not have a fragment") }
            target = rest.isEmpty ? "/" : String(rest)
            client = EndpointClient(
                loop: context.loop, origin: Origin(scheme: origin.scheme, host: origin.host, port: origin.port, hostHeader: origin.hostHeader),
                name: "the subject token URL", tls: origin.scheme == .https ? context.tls : nil, timeout: context.timeout, maxConnections: 1,
                maxBody: EndpointClient.googleMaxBody, logger: context.logger)
        }
    }

    func read(_ completion: @escaping (Result<String, ProxyFailure>) -> Void) {
        switch source {
        case .file(let path, let format):
            guard let data = FileManager.default.contents(atPath: path), data.count <= Self.maximumFileBytes else {
                return completion(.failure(.providerUnavailable(
                    "the subject token file \(path) cannot be read (or is larger than \(Self.maximumFileBytes) bytes)")))
            }
            completion(SubjectTokenContent.parse(Array(data), format: format, from: "the subject token file \(path)"))
        case .url(_, let headers, let format):
            guard let client else { return }
            client.send(method: "GET", target: target, headers: headers) { [name = client.name] result in
                completion(result.flatMap { answer in
                    GoogleAnswer.interpret(answer, from: name) { SubjectTokenContent.parse($0, format: format, from: $1) }
                })
            }
        }
    }

    func close() { client?.close() }
}
