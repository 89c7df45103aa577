/// What a Google credential endpoint's status means (docs/CONTRACT.md §5): a refusal (400,
/// 401, 403, 404: `invalid_grant`, no permission) is the client's 403 / gRPC 7 with the
/// endpoint's own `error` and message; 408, 429 (quota) and 5xx are 503 / 14 and back off; a
/// 2xx is read by `parse`, whose failure is 502 / 14. No message carries a token.
enum GoogleAnswer {
    static func interpret<T>(
        _ answer: EndpointClient.Answer, from name: String, _ parse: ([UInt8], String) -> Result<T, ProxyFailure>
    ) -> Result<T, ProxyFailure> {
        let said = AccessTokenAnswer.refusal(answer.body).map { ": \($0)" } ?? ""
        switch answer.status {
        case 200..<300:
            return parse(answer.body, name)
        case 408, 429, 500...:
            return .failure(.providerUnavailable("\(name) answered HTTP \(answer.status)\(said)"))
        case 400..<500:
            return .failure(.providerRefused("\(name) refused with HTTP \(answer.status)\(said)"))
        default:
            return .failure(.providerAnswerUnusable("\(name) answered HTTP \(answer.status)"))
        }
    }
}
