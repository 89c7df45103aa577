import ArgumentParser
import FleetTokenProxy
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging

/// `serve`'s flags, for the environment-variable mapping (docs/CONTRACT.md §6).
let serveFlags: [EnvironmentArguments.Flag] = [
    .init("access-log", takesValue: false),
    .init("listen"), .init("allow-non-loopback", takesValue: false), .init("upstream"), .init("upstream-protocol"),
    .init("upstream-ca-file"), .init("provider-url"), .init("provider-header", repeatable: true),
    .init("provider-header-file"), .init("provider-ca-file"), .init("token-field"), .init("expiry-field"),
    .init("refresh-margin"), .init("min-token-validity"), .init("max-entities"), .init("provider-concurrency"),
    .init("provider-timeout"), .init("lazy-refresh", takesValue: false), .init("admin-listen"), .init("socket-mode"),
    .init("drain-timeout"), .init("upstream-idle-timeout"), .init("log-level"),
    .init("provider-backoff-max"), .init("max-buffered-bytes"),
    .init("signer", repeatable: true), .init("signed-token-lifetime"),
    .init("oauth-token-endpoint"), .init("iam-endpoint"), .init("provider-id-token-audience"),
]

struct FleetTokenProxyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fleet-token-proxy",
        abstract: "Attaches per-entity Fleet Engine JWTs to the calls of an unmodified client.",
        // Asked of the build stamp and the loaded libraries when the command line is parsed.
        version: VersionReport.current().text,
        subcommands: [Serve.self, Demo.self, StandIn.self]
    )
}

/// Parses the command line and runs the command; a bad command line or configuration ends
/// with one line on stderr and exit status 2.
func main() -> Int32 {
    signal(SIGPIPE, SIG_IGN)
    var arguments = Array(CommandLine.arguments.dropFirst())
    do {
        if arguments.first == "serve" {
            arguments = try EnvironmentArguments.merge(arguments: arguments, environment: ProcessEnvironment.current(), flags: serveFlags)
        }
        var command = try FleetTokenProxyCommand.parseAsRoot(arguments)
        if let serve = command as? Serve { return try serve.execute() }
        if let demo = command as? Demo { return demo.execute() }
        if let provider = command as? StandIn.Provider { return try provider.execute() }
        if let engine = command as? StandIn.FleetEngine { return try engine.execute() }
        if let account = command as? StandIn.ServiceAccount { return try account.execute() }
        if let google = command as? StandIn.Google { return try google.execute() }
        try command.run()
        return 0
    } catch let error as ConfigError {
        return fail(error.message)
    } catch let error as StartupError {
        return fail(error.message)
    } catch {
        if FleetTokenProxyCommand.exitCode(for: error) == .success {
            print(FleetTokenProxyCommand.fullMessage(for: error))
            return 0
        }
        let message = FleetTokenProxyCommand.message(for: error)
        return fail(message.split(separator: "\n").first.map(String.init) ?? "invalid command line")
    }
}

/// The line goes out at priority 3 (error) when stderr is the journal, so that
/// `journalctl -p warning` shows why a start failed; journald would file it at 6 otherwise.
func fail(_ message: String) -> Int32 {
    let journal = LineLogHandler.stderrIsJournal(ProcessEnvironment.current()["JOURNAL_STREAM"])
    let priority = journal ? "<\(LineLogHandler.syslogPriority(.error))>" : ""
    StandardStreams.error("\(priority)fleet-token-proxy: \(message)\n")
    return 2
}

/// A start-up failure that is not a configuration value (a port in use, an unreadable file).
struct StartupError: Error {
    let message: String
}

exit(main())
