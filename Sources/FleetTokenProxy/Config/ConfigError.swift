/// A configuration value the sidecar cannot start with (docs/CONTRACT.md §6): bad flag value, bad header
/// line, bad URL. `message` is the one line printed on stderr before exiting with status 2, so
/// it says what is wrong and never repeats a secret.
package struct ConfigError: Error, CustomStringConvertible, Equatable, Sendable {
    package var message: String

    package init(_ message: String) {
        self.message = message
    }

    package var description: String { message }
}

extension ConfigError {
    /// Operator input for a message: quoted, cut and with control characters replaced
    /// (`EchoedInput`). Only for values that are not secret (addresses, URLs, names).
    static func quoted<S: StringProtocol>(_ text: S) -> String {
        EchoedInput.quoted(text)
    }
}
