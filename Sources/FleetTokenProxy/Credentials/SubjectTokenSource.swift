/// Where an `external_account` file's subject token comes from (docs/CONTRACT.md §4a): its
/// `credential_source`, a `file` (a Kubernetes projected token, a CI job's OIDC token) or a
/// `url` (Azure's instance metadata, a local identity agent) with `headers`, read as text or as
/// JSON with `format.subject_token_field_name`; an `executable` (pluggable auth); AWS
/// (`environment_id` aws1); an X.509 `certificate`, whose chain is the token and which the STS
/// exchange presents over mutual TLS.
package enum SubjectTokenSource: Sendable, Equatable, CustomStringConvertible {
    case file(path: String, format: SubjectTokenFormat)
    /// `headers` may carry a credential of the identity provider's: never shown.
    case url(String, headers: [HeaderField], format: SubjectTokenFormat)
    case executable(ExecutableCommand)
    case aws(AWSCredentialSource)
    case certificate(CertificateCredentialSource)

    /// `credential_source`'s members, or why not (a field name, never a value).
    static func parse(_ members: [String: JSONish]) -> Result<SubjectTokenSource, ADCFileError> {
        if members["certificate"] != nil { return CertificateCredentialSource.parse(members).map { .certificate($0) } }
        if members["environment_id"] != nil {
            guard members["file"] == nil, members["executable"] == nil else { return .failure(.badField("credential_source.environment_id (alone)")) }
            return AWSCredentialSource.parse(members).map { .aws($0) }
        }
        if let executable = members["executable"] {
            guard members["file"] == nil, members["url"] == nil, case .object(let executableMembers) = executable else {
                return .failure(.badField("credential_source.executable (alone)"))
            }
            return ExecutableCommand.parse(executableMembers).map { .executable($0) }
        }
        let format: SubjectTokenFormat
        switch members["format"] {
        case nil, .null?:
            format = .text
        case .object(let formatMembers)?:
            switch formatMembers["type"]?.stringValue {
            case nil, "text": format = .text
            case "json":
                guard let field = ADCFile.field("subject_token_field_name", in: formatMembers) else {
                    return .failure(.badField("credential_source.format.subject_token_field_name"))
                }
                format = .json(field: field)
            default:
                return .failure(.badField("credential_source.format.type"))
            }
        default:
            return .failure(.badField("credential_source.format"))
        }
        switch (members["file"], members["url"]) {
        case (.some, .some), (nil, nil):
            return .failure(.badField("credential_source.file or credential_source.url (exactly one)"))
        case (.some, nil):
            guard let path = ADCFile.field("file", in: members) else { return .failure(.badField("credential_source.file")) }
            return .success(.file(path: path, format: format))
        case (nil, .some):
            guard let url = ADCFile.field("url", in: members) else { return .failure(.badField("credential_source.url")) }
            var headers: [HeaderField] = []
            switch members["headers"] {
            case nil, .null?: break
            case .object(let fields)?:
                for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
                    // The name must be the whole name: "A:b" would otherwise send field A.
                    guard let text = value.stringValue, let field = try? HeaderLine.parse("\(name): \(text)"), field.name == name else {
                        return .failure(.badField("credential_source.headers"))
                    }
                    headers.append(HeaderField(name: field.name, value: field.value))
                }
            default:
                return .failure(.badField("credential_source.headers"))
            }
            return .success(.url(url, headers: headers, format: format))
        }
    }

    /// For the start-up line: where, never a header's value.
    package var description: String {
        switch self {
        case .file(let path, let format): return "subject token file \(path)\(format.description)"
        case .url(let url, _, let format): return "subject token URL \(RedactedURL.text(url))\(format.description)"
        case .executable(let command): return "subject token \(command)"
        case .aws(let source): return "subject token of \(source)"
        case .certificate(let source): return "subject token of the \(source)"
        }
    }
}

/// How the subject token is read from its source's bytes.
package enum SubjectTokenFormat: Sendable, Equatable {
    /// The bytes are the token (a trailing line end is not part of it).
    case text
    /// A JSON object whose member `field` is the token.
    case json(field: String)

    var description: String {
        switch self {
        case .text: return ""
        case .json(let field): return " (JSON \"\(field)\")"
        }
    }
}
