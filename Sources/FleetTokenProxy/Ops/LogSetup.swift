import Logging

public enum LogSetup {
    /// The process-wide log handler: one event a line on stderr, at `level`.
    public static func makeLogger(level: Logger.Level, label: String = "fleet-token-proxy") -> Logger {
        bootstrapOnce
        var logger = Logger(label: label)
        logger.logLevel = level
        return logger
    }

    private static let bootstrapOnce: Void = {
        LoggingSystem.bootstrap { label in StreamLogHandler.standardError(label: label) }
    }()
}
