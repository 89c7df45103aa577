#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Gets an `external_account`'s subject token for each STS exchange (docs/CONTRACT.md §4a):
/// the file is read again every time, so a token the identity provider rotated (a Kubernetes
/// projected token, a CI job's) is the one sent, as Google's libraries do; the URL is asked
/// every time with its headers; the executable is run (on a thread of its own, never through a
/// shell) unless its output file holds an answer that has not expired; a certificate's files
/// are read again (`WorkloadCertificate`). Never kept, never shown:
/// failures name the place only, never what the program printed.
///
/// Loop-bound: completions run on the loop thread. A file is a few kilobytes, read on the loop
/// once an hour.
final class SubjectTokenReader {
    /// A subject token file is a few kilobytes; more is not one.
    static let maximumFileBytes = 64 * 1024

    private let source: SubjectTokenSource
    private let account: ExternalAccountCredentials
    private let client: EndpointClient?
    private let target: String
    private let loop: EventLoop
    private let clock: TokenClock
    /// One thread for the executable, made when there is one.
    private let runner: WorkerPool?
    private let aws: AWSSubjectTokenReader?
    /// An X.509 source's certificate, read again for each exchange.
    private let certificate: WorkloadCertificate?

    init(account: ExternalAccountCredentials, file: String, context: TokenExchangeContext) throws(ConfigError) {
        self.account = account
        source = account.subjectTokenSource
        loop = context.loop
        clock = context.clock
        if case .aws(let awsSource) = source {
            aws = try AWSSubjectTokenReader(source: awsSource, audience: account.audience, file: file, context: context)
        } else {
            aws = nil
        }
        certificate = context.certificate
        switch source {
        case .file, .aws, .certificate:
            client = nil
            target = ""
            runner = nil
        case .executable:
            client = nil
            target = ""
            runner = WorkerPool(threads: 1, queueLimit: 1)
        case .url(let url, _, _):
            runner = nil
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
        case .executable(let command):
            run(command, completion)
        case .aws:
            aws?.read(completion)
        case .certificate:
            certificate.map { completion($0.read()) }
        case .url(_, let headers, let format):
            guard let client else { return }
            client.send(method: "GET", target: target, headers: headers) { [name = client.name] result in
                completion(result.flatMap { answer in
                    GoogleAnswer.interpret(answer, from: name) { SubjectTokenContent.parse($0, format: format, from: $1) }
                })
            }
        }
    }

    /// The output file's answer while it has not expired, else the program's (its output, or
    /// the output file it wrote when it printed nothing).
    private func run(_ command: ExecutableCommand, _ completion: @escaping (Result<String, ProxyFailure>) -> Void) {
        let source = "the \(command)"
        if let outputFile = command.outputFile, let cached = Self.readSmallFile(outputFile),
           case .success(let token) = ExecutableResponse.parse(cached, from: source, wallNow: clock.wallNow), token.expiresAt != nil {
            return completion(.success(token.value))
        }
        guard let runner else { return }
        var environment = command.environment
        environment["GOOGLE_EXTERNAL_ACCOUNT_AUDIENCE"] = account.audience
        environment["GOOGLE_EXTERNAL_ACCOUNT_TOKEN_TYPE"] = account.subjectTokenType
        environment["GOOGLE_EXTERNAL_ACCOUNT_INTERACTIVE"] = "0"
        environment["GOOGLE_EXTERNAL_ACCOUNT_REVOKE"] = "0"
        environment["GOOGLE_EXTERNAL_ACCOUNT_ID"] = account.targetPrincipal ?? ""
        if let target = account.targetPrincipal { environment["GOOGLE_EXTERNAL_ACCOUNT_IMPERSONATED_EMAIL"] = target }
        if let outputFile = command.outputFile { environment["GOOGLE_EXTERNAL_ACCOUNT_OUTPUT_FILE"] = outputFile }
        let back = ReaderReference(self, completion)
        let loop = loop
        let arguments = command.arguments, timeout = command.timeout, environmentToPass = environment
        let queued = runner.submit {
            let outcome = ExecutableRunner.run(arguments, environment: environmentToPass, timeout: timeout)
            loop.execute { back.reader?.ran(command, outcome, back.completion) }
        }
        if !queued { completion(.failure(.providerUnavailable("\(source) is already running"))) }
    }

    private func ran(_ command: ExecutableCommand, _ outcome: ExecutableRunner.Outcome,
                     _ completion: @escaping (Result<String, ProxyFailure>) -> Void) {
        let source = "the \(command)"
        switch outcome {
        case .couldNotStart(let error):
            completion(.failure(.providerUnavailable("\(source) could not be started: \(String(cString: strerror(error)))")))
        case .timedOut:
            completion(.failure(.providerUnavailable("\(source) did not finish within \(Int(command.timeout)) s and was killed")))
        case .killed(let signal):
            completion(.failure(.providerUnavailable("\(source) ended by signal \(signal)")))
        case .exited(let status, _) where status != 0:
            // What it printed may hold a token: the status only.
            completion(.failure(.providerUnavailable("\(source) exited with status \(status)")))
        case .exited(_, let output):
            var answer = output
            if answer.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }), let outputFile = command.outputFile {
                answer = Self.readSmallFile(outputFile) ?? []
            }
            completion(ExecutableResponse.parse(answer, from: source, wallNow: clock.wallNow).map(\.value))
        }
    }

    private static func readSmallFile(_ path: String) -> [UInt8]? {
        guard let data = FileManager.default.contents(atPath: path), data.count <= maximumFileBytes else { return nil }
        return Array(data)
    }

    func close() {
        client?.close()
        runner?.stop()
        aws?.close()
    }
}

/// A weak reference to the reader and the completion it owes, carried by the runner's job back
/// to the loop.
///
/// `@unchecked Sendable`: both are used only inside work the loop runs (`EventLoop.execute`),
/// on the thread that owns the reader; the worker only carries the box.
private final class ReaderReference: @unchecked Sendable {
    weak var reader: SubjectTokenReader?
    let completion: (Result<String, ProxyFailure>) -> Void
    init(_ reader: SubjectTokenReader, _ completion: @escaping (Result<String, ProxyFailure>) -> Void) {
        self.reader = reader
        self.completion = completion
    }
}
