/// Turns `FLEET_TOKEN_PROXY_<FLAG>` environment variables into command-line arguments, so a
/// systemd `EnvironmentFile=` configures the same flags (docs/CONTRACT.md §6). A flag given on the command
/// line wins over its variable.
package enum EnvironmentArguments {
    /// A flag `serve` understands, and whether it takes a value.
    package struct Flag: Sendable {
        package var name: String
        package var takesValue: Bool
        package var repeatable: Bool
        package init(_ name: String, takesValue: Bool = true, repeatable: Bool = false) {
            self.name = name
            self.takesValue = takesValue
            self.repeatable = repeatable
        }
        /// `--provider-url` → `FLEET_TOKEN_PROXY_PROVIDER_URL`.
        package var variable: String {
            "FLEET_TOKEN_PROXY_" + String(name.map { $0 == "-" ? "_" : $0 }).uppercased()
        }
    }

    /// `arguments` plus one argument pair per variable whose flag is not already given.
    /// A repeatable flag's variable holds one value a line; a switch's is 1/true/yes/on.
    package static func merge(arguments: [String], environment: [String: String], flags: [Flag]) throws(ConfigError) -> [String] {
        var result = arguments
        for flag in flags {
            guard let raw = environment[flag.variable] else { continue }
            let given = arguments.contains { $0 == "--" + flag.name || $0.hasPrefix("--" + flag.name + "=") }
            if given { continue }
            if !flag.takesValue {
                switch raw.lowercased() {
                case "1", "true", "yes", "on": result.append("--" + flag.name)
                case "0", "false", "no", "off", "": break
                default: throw ConfigError("\(flag.variable) must be true or false, not \(raw.prefix(32))")
                }
                continue
            }
            let values = flag.repeatable ? raw.split(whereSeparator: \.isNewline).map(String.init) : [raw]
            for value in values { result += ["--" + flag.name, value] }
        }
        return result
    }
}
