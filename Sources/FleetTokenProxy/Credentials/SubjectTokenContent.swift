/// Reads a subject token from what its source held (docs/CONTRACT.md §4a): the file's or the
/// URL answer's bytes, as text or as JSON with the token in one member. The token goes to STS
/// in a form body: 1 to `maximumLength` visible ASCII bytes. It is a credential of the
/// workload's: no refusal quotes the bytes, only where they came from.
package enum SubjectTokenContent {
    /// An OIDC token or a SAML assertion is a few kilobytes.
    static let maximumLength = 16 * 1024

    package static func parse(_ bytes: [UInt8], format: SubjectTokenFormat, from location: String) -> Result<String, ProxyFailure> {
        let token: String
        switch format {
        case .text:
            // What an editor or `echo` leaves at the end is not part of the token.
            var text = bytes[...]
            while let last = text.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") || last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") {
                text = text.dropLast()
            }
            token = String(decoding: text, as: UTF8.self)
        case .json(let field):
            guard case .object(let members)? = JSONish.parse(bytes) else {
                return unusable("\(location) is not a JSON object")
            }
            guard let value = members[field]?.stringValue else {
                return unusable("\(location) has no \"\(field)\" string")
            }
            token = value
        }
        guard !token.isEmpty, token.utf8.count <= maximumLength, token.utf8.allSatisfy(ASCII.isVisible) else {
            return unusable("\(location) holds a subject token that is empty, longer than \(maximumLength) bytes or not visible ASCII")
        }
        return .success(token)
    }

    private static func unusable(_ message: String) -> Result<String, ProxyFailure> {
        .failure(.providerAnswerUnusable(message))
    }
}
