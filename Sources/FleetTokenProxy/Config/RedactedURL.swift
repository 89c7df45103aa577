/// A URL as it may be shown in a log line or an error: an operator's provider URL can carry a
/// credential in its query (`?key=…`), its user information or its fragment, and logs and
/// start-up errors end up in journals that more people read than the configuration.
///
/// Kept: scheme, host, port and path (with `{placeholders}`), and the query's parameter names.
/// Replaced by `…`: every query value that is not exactly one placeholder, a query item
/// without a name, the user information and the fragment.
///
///     https://auth.internal/t/{type}/{id}?key=s3cr3t&entity={id}#x
///     https://auth.internal/t/{type}/{id}?key=…&entity={id}#…
enum RedactedURL {
    static let hidden = "\u{2026}"
    private static let placeholders: Set<Substring> = ["{type}", "{id}", "{provider}"]

    static func text<S: StringProtocol>(_ url: S) -> String {
        var rest = Substring(url)
        var fragment = ""
        if let hash = rest.firstIndex(of: "#") {
            fragment = "#" + hidden
            rest = rest[..<hash]
        }
        var query: Substring?
        if let question = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: question)...]
            rest = rest[..<question]
        }
        var shown = withoutUserInformation(rest)
        if let query {
            shown += "?" + query.split(separator: "&", omittingEmptySubsequences: false).map(item).joined(separator: "&")
        }
        return shown + fragment
    }

    /// `name=value` with the value hidden unless it is one placeholder; a bare item may itself
    /// be the secret, so it is hidden whole.
    private static func item(_ item: Substring) -> String {
        guard let equals = item.firstIndex(of: "=") else { return item.isEmpty ? "" : hidden }
        let value = item[item.index(after: equals)...]
        return item[..<equals] + "=" + (value.isEmpty || placeholders.contains(value) ? String(value) : hidden)
    }

    /// Just past the first `://` (without Foundation's `range(of:)`).
    private static func endOfSchemeSeparator(in text: Substring) -> Substring.Index? {
        let separator = "://".utf8
        var index = text.utf8.startIndex
        while index != text.utf8.endIndex {
            if text.utf8[index...].starts(with: separator) {
                return text.utf8.index(index, offsetBy: separator.count)
            }
            index = text.utf8.index(after: index)
        }
        return nil
    }

    /// `scheme://user:password@host/path` becomes `scheme://…@host/path` (with or without a scheme).
    private static func withoutUserInformation(_ text: Substring) -> String {
        let authorityStart = endOfSchemeSeparator(in: text) ?? text.startIndex
        let authorityEnd = text[authorityStart...].firstIndex(of: "/") ?? text.endIndex
        guard let at = text[authorityStart..<authorityEnd].lastIndex(of: "@") else { return String(text) }
        return text[..<authorityStart] + hidden + text[at...]
    }
}
