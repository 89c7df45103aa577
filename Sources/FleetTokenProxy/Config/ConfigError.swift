/// A configuration value the sidecar cannot start with (SPEC §6): bad flag value, bad header
/// line, bad URL. `message` is the one line printed on stderr before exiting with status 2, so
/// it says what is wrong and never repeats a secret.
public struct ConfigError: Error, CustomStringConvertible, Equatable, Sendable {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}

extension ConfigError {
    /// The longest piece of operator input a message repeats, in Unicode scalars.
    static let echoLimit = 64

    /// Operator input for a message: quoted, cut to `echoLimit` scalars and with control
    /// characters replaced. Only for values that are not secret (addresses, URLs, names).
    static func quoted<S: StringProtocol>(_ text: S) -> String {
        var out = String.UnicodeScalarView()
        var count = 0
        for scalar in text.unicodeScalars {
            if count == echoLimit {
                out.removeLast()
                out.append("\u{2026}")
                break
            }
            let isControl = scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
            out.append(isControl ? "\u{FFFD}" : scalar)
            count += 1
        }
        return "'" + String(out) + "'"
    }
}
