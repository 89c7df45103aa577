/// An `external_account`'s `credential_source.executable` (docs/CONTRACT.md §4a, pluggable
/// auth): a program the sidecar runs for the subject token, only where
/// `GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES=1` allows it, as Google's libraries require. The
/// `command` is split into words as a POSIX shell splits them (quotes and backslashes, no
/// expansion) and run directly, never through a shell; it must finish within `timeout`; its
/// answer may be kept in `outputFile` and used from there while it has not expired.
/// `description` names the program only: its arguments may hold a secret.
package struct ExecutableCommand: Sendable, Equatable, CustomStringConvertible {
    package var arguments: [String]
    /// Seconds: `timeout_millis`, 5 to 120 s, 30 s by default.
    package var timeout: Double
    package var outputFile: String?
    /// The sidecar's environment, which the program gets (with the variables that describe the
    /// exchange), as Google's libraries pass theirs.
    package var environment: [String: String]

    static let timeoutMillis = 5_000...120_000
    static let defaultTimeoutMillis = 30_000
    /// The variable that allows executables, and the one value that does.
    package static let allowVariable = "GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES"

    package init(arguments: [String], timeout: Double = Double(defaultTimeoutMillis) / 1000, outputFile: String? = nil,
                 environment: [String: String] = [:]) {
        self.arguments = arguments
        self.timeout = timeout
        self.outputFile = outputFile
        self.environment = environment
    }

    package var description: String { "executable \(arguments.first ?? "")" }

    /// `credential_source.executable`'s members, or why not (a field name, never a value).
    static func parse(_ members: [String: JSONish]) -> Result<ExecutableCommand, ADCFileError> {
        guard let command = members["command"]?.stringValue, command.utf8.count <= ADCFile.maximumFieldLength,
              !command.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }),
              let arguments = split(command), !arguments.isEmpty
        else { return .failure(.badField("credential_source.executable.command")) }
        var millis = defaultTimeoutMillis
        if let value = members["timeout_millis"] {
            guard let number = value.numberValue, number.rounded() == number, timeoutMillis.contains(Int(number)) else {
                return .failure(.badField("credential_source.executable.timeout_millis (5000 to 120000)"))
            }
            millis = Int(number)
        }
        switch ADCFile.optionalField("output_file", in: members, prefix: "credential_source.executable.") {
        case .success(let outputFile):
            return .success(ExecutableCommand(arguments: arguments, timeout: Double(millis) / 1000, outputFile: outputFile))
        case .failure(let error):
            return .failure(error)
        }
    }

    /// Words as a POSIX shell (and Python's `shlex.split`) reads them: blanks separate words;
    /// single quotes keep everything; double quotes keep everything but `\"` and `\\`; a
    /// backslash outside quotes keeps the next character. Nil for an unclosed quote or a
    /// trailing backslash. Nothing is expanded: no variables, globs or `;`.
    static func split(_ command: String) -> [String]? {
        var words: [String] = []
        var word: [Character] = []
        var inWord = false
        var iterator = command.makeIterator()
        while let character = iterator.next() {
            switch character {
            case " ", "\t":
                if inWord { words.append(String(word)) }
                word = []
                inWord = false
            case "'":
                inWord = true
                while true {
                    guard let next = iterator.next() else { return nil }
                    if next == "'" { break }
                    word.append(next)
                }
            case "\"":
                inWord = true
                while true {
                    guard let next = iterator.next() else { return nil }
                    if next == "\"" { break }
                    if next == "\\" {
                        guard let escaped = iterator.next() else { return nil }
                        if escaped != "\"" && escaped != "\\" { word.append(next) }
                        word.append(escaped)
                    } else {
                        word.append(next)
                    }
                }
            case "\\":
                guard let escaped = iterator.next() else { return nil }
                inWord = true
                word.append(escaped)
            default:
                inWord = true
                word.append(character)
            }
        }
        if inWord { words.append(String(word)) }
        return words
    }
}
