#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging

package enum LogSetup {
    /// The process-wide log handler: one event a line on stderr, at `level`; with journald
    /// priorities when stderr is the journal (`JOURNAL_STREAM`).
    package static func makeLogger(level: Logger.Level, label: String = "fleet-token-proxy") -> Logger {
        bootstrapOnce
        var logger = Logger(label: label)
        logger.logLevel = level
        return logger
    }

    /// The per-call access log (`--access-log`): its own label, at `info` whatever `--log-level`
    /// says, since asking for it is asking to see every call.
    static func makeAccessLogger() -> Logger {
        makeLogger(level: .info, label: accessLabel)
    }

    static let accessLabel = "fleet-token-proxy.access"

    private static let bootstrapOnce: Void = {
        let journal = LineLogHandler.stderrIsJournal(ProcessInfo.processInfo.environment["JOURNAL_STREAM"])
        LoggingSystem.bootstrap { label in LineLogHandler(label: label, journal: journal) }
    }()
}
