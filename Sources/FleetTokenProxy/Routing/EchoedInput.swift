/// How client or operator input is repeated in an error message or log line: cut to `limit`
/// Unicode scalars (the last an ellipsis when cut) with control characters replaced, so
/// neither a huge nor a hostile value reaches logs or error bodies whole.
enum EchoedInput {
    static let limit = 64

    static func capped<S: StringProtocol>(_ text: S) -> String {
        var out = String.UnicodeScalarView()
        var count = 0
        for scalar in text.unicodeScalars {
            if count == limit {
                out.removeLast()
                out.append("\u{2026}")
                break
            }
            let isControl = scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
            out.append(isControl ? "\u{FFFD}" : scalar)
            count += 1
        }
        return String(out)
    }

    static func quoted<S: StringProtocol>(_ text: S) -> String {
        "'" + capped(text) + "'"
    }
}
