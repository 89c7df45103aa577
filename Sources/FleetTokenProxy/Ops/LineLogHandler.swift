import Logging
#if canImport(Glibc)
import Glibc
#endif

/// swift-log handler that writes one event a line to stderr: `key=value` metadata after the
/// message, newlines escaped so an event can never span lines.
///
/// Under systemd, when stderr is the journal stream (`JOURNAL_STREAM` names its device and
/// inode), each line starts with the syslog priority `<N>` instead of a timestamp and level
/// (the sd-daemon convention: journald reads the priority and adds the time itself).
package struct LineLogHandler: LogHandler {
    /// Labels that need no mention on each line (the sidecar's own).
    static let quietLabel = "fleet-token-proxy"

    package var logLevel: Logger.Level = .info
    package var metadata: Logger.Metadata = [:]
    package var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let journal: Bool
    private let write: @Sendable (String) -> Void

    /// - Parameters:
    ///   - journal: prefix lines with `<N>` priorities (stderr is the journal).
    ///   - write: where finished lines go (stderr unless a test says otherwise).
    package init(label: String, journal: Bool, write: @escaping @Sendable (String) -> Void = LineLogHandler.writeToStandardError) {
        self.label = label
        self.journal = journal
        self.write = write
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { _, new in new } }
        if let extra = event.metadata { all.merge(extra) { _, new in new } }
        write(format(level: event.level, message: event.message.description, metadata: all, now: Self.wallClock()))
    }

    /// The whole line, newline included.
    func format(level: Logger.Level, message: String, metadata: Logger.Metadata, now: (seconds: Int, millis: Int)) -> String {
        var line = journal ? "<\(Self.syslogPriority(level))>" : "\(Self.timestamp(now)) \(level) "
        if label != Self.quietLabel { line += "\(label): " }
        line += Self.oneLine(message)
        for key in metadata.keys.sorted() {
            line += " \(Self.oneLine(key))=\(Self.quote(Self.render(metadata[key]!)))"
        }
        line += "\n"
        return line
    }

    /// sd-daemon's priorities (`SD_CRIT` 2 … `SD_DEBUG` 7) for swift-log's levels.
    package static func syslogPriority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: return 7
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        case .error: return 3
        case .critical: return 2
        }
    }

    /// True when `JOURNAL_STREAM` (`device:inode`) names the file stderr is: the process was
    /// started by systemd with its stderr connected to journald, and not redirected since.
    package static func stderrIsJournal(_ journalStream: String?) -> Bool {
        guard let journalStream else { return false }
        let parts = journalStream.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var st = stat()
        guard fstat(STDERR_FILENO, &st) == 0 else { return false }
        return UInt64(st.st_dev) == device && UInt64(st.st_ino) == inode
    }

    /// One `write(2)` a line: lines from different threads never interleave mid-line.
    static let writeToStandardError: @Sendable (String) -> Void = { line in
        var line = line
        line.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let n = Glibc.write(STDERR_FILENO, bytes.baseAddress! + offset, bytes.count - offset)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return }
                offset += n
            }
        }
    }

    private static func render(_ value: Logger.MetadataValue) -> String {
        switch value {
        case .string(let s): return s
        case .stringConvertible(let c): return c.description
        case .array(let items): return "[" + items.map(render).joined(separator: ",") + "]"
        case .dictionary(let d): return "{" + d.keys.sorted().map { "\($0):\(render(d[$0]!))" }.joined(separator: ",") + "}"
        }
    }

    /// Control characters (newlines first of all) as escapes: one event, one line.
    static func oneLine(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    out += "\\x" + String(scalar.value, radix: 16).leftPadded(to: 2)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }

    /// A value with spaces, quotes, `=` or control characters in double quotes (escaped), so
    /// `key=value` pairs split cleanly.
    static func quote(_ value: String) -> String {
        let plain = !value.isEmpty && !value.unicodeScalars.contains {
            $0 == " " || $0 == "\"" || $0 == "=" || $0 == "\\" || $0.value < 0x20 || $0.value == 0x7F
        }
        if plain { return value }
        return "\"" + oneLine(value.replacingAll("\\", with: "\\\\").replacingAll("\"", with: "\\\"")) + "\""
    }

    private static func wallClock() -> (seconds: Int, millis: Int) {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return (ts.tv_sec, ts.tv_nsec / 1_000_000)
    }

    /// `2025-01-31T12:00:00.123Z`.
    static func timestamp(_ now: (seconds: Int, millis: Int)) -> String {
        var seconds = time_t(now.seconds)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ n: Int32) -> String { String(n).leftPadded(to: 2, with: "0") }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(String(now.millis).leftPadded(to: 3, with: "0"))Z"
    }
}

extension String {
    fileprivate func leftPadded(to width: Int, with pad: Character = "0") -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }

    fileprivate func replacingAll(_ target: Character, with replacement: String) -> String {
        var out = ""
        for c in self { if c == target { out += replacement } else { out.append(c) } }
        return out
    }
}
