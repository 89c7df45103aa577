extension ADCTokenSource {
    /// POSTs the JSON `body` to `target` on `client` as Google's libraries send a call an ADC
    /// token authorises (docs/CONTRACT.md §4a): the token as `Authorization: Bearer`, the quota
    /// project as `x-goog-user-project`. A 401 means the token was revoked or expired early: it
    /// is dropped and the call made once more with a fresh one. Completes with the answer, or
    /// with why there is no token.
    func authorisedPost(_ body: [UInt8], to target: String, on client: EndpointClient,
                        completion: @escaping (Result<EndpointClient.Answer, ProxyFailure>) -> Void) {
        post(body, to: target, on: client, retry: true, completion: completion)
    }

    private func post(_ body: [UInt8], to target: String, on client: EndpointClient, retry: Bool,
                      completion: @escaping (Result<EndpointClient.Answer, ProxyFailure>) -> Void) {
        token { [self] result in
            switch result {
            case .failure(let failure):
                completion(.failure(failure))
            case .success(let held):
                var headers = [
                    HeaderField(name: "Authorization", value: "Bearer " + held.value),
                    HeaderField(name: "Content-Type", value: "application/json"),
                    HeaderField(name: "Accept", value: "application/json"),
                ]
                if let quotaProject { headers.append(HeaderField(name: "x-goog-user-project", value: quotaProject)) }
                client.send(method: "POST", target: target, headers: headers, body: body) { [self] answer in
                    if retry, case .success(let answer) = answer, answer.status == 401 {
                        refused(held.value)
                        return post(body, to: target, on: client, retry: false, completion: completion)
                    }
                    completion(answer)
                }
            }
        }
    }
}
