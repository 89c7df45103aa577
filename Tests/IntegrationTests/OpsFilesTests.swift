import Foundation
import XCTest

/// ops/: the Prometheus alerting rules pass `promtool check rules` and their own
/// `promtool test rules`; every series the rules and the Grafana dashboard query is one the real
/// binary's /metrics serves (scraped after a few calls); and that page passes
/// `promtool check metrics`.
final class OpsFilesTests: XCTestCase {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let rules = repository.appendingPathComponent("ops/prometheus/fleet-token-proxy.rules.yml")
    static let rulesTest = repository.appendingPathComponent("ops/prometheus/fleet-token-proxy.rules.test.yml")
    static let dashboard = repository.appendingPathComponent("ops/grafana/fleet-token-proxy.json")
    static let promtool = "/usr/bin/promtool"
    /// Series Prometheus records itself for each scrape; not the sidecar's to serve.
    static let scrapeSeries: Set<String> = ["up"]

    override func setUpWithError() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.promtool) else {
            XCTFail("promtool is missing: scripts/install-deps --test installs the prometheus package")
            throw SidecarError("no promtool")
        }
    }

    func testTheRulesPassPromtoolCheckAndTheirOwnTests() throws {
        let check = try runCommand(Self.promtool, ["check", "rules", Self.rules.path])
        XCTAssertEqual(check.status, 0, check.stdout + check.stderr)
        XCTAssertTrue(check.stdout.contains("SUCCESS: \(try ruleExpressions().count) rules found"), check.stdout)
        let test = try runCommand(Self.promtool, ["test", "rules", Self.rulesTest.path])
        XCTAssertEqual(test.status, 0, test.stdout + test.stderr)
    }

    /// Grafana's variables replaced, every dashboard query is valid PromQL to promtool.
    func testTheDashboardQueriesAreValidPromQL() throws {
        let queries = try dashboardExpressions()
        XCTAssertGreaterThan(queries.count, 15)
        var rules = "groups:\n  - name: dashboard\n    rules:\n"
        for (index, query) in queries.enumerated() {
            let promQL = query.replacingOccurrences(of: "$__rate_interval", with: "5m").replacingOccurrences(of: "$instance", with: ".*")
            rules += "      - record: dashboard:query\(index)\n        expr: '\(promQL.replacingOccurrences(of: "'", with: "''"))'\n"
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("ftp-dashboard-\(UUID().uuidString.prefix(8)).yml")
        try rules.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let check = try runCommand(Self.promtool, ["check", "rules", file.path])
        XCTAssertEqual(check.status, 0, check.stdout + check.stderr)
    }

    func testEverySeriesTheRulesAndTheDashboardQueryIsOnMetricsAndThePagePassesPromtool() throws {
        let page = try scrapeAfterCalls()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("ftp-metrics-\(UUID().uuidString.prefix(8)).txt")
        try page.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let check = try runCommand("/bin/sh", ["-c", "\"$0\" check metrics <\"$1\"", Self.promtool, file.path])
        XCTAssertEqual(check.status, 0, "promtool check metrics: " + check.stdout + check.stderr)
        let served = Set(page.split(separator: "\n").filter { !$0.hasPrefix("#") }
            .map { String($0.prefix { $0 != "{" && $0 != " " }) })
        var queried: Set<String> = []
        for expression in try ruleExpressions() + dashboardExpressions() {
            queried.formUnion(Self.seriesNames(in: expression))
        }
        XCTAssertTrue(queried.contains("fleet_token_proxy_provider_request_duration_seconds_bucket"), "\(queried)")
        XCTAssertGreaterThanOrEqual(queried.count, 15, "\(queried)")
        XCTAssertEqual(queried.subtracting(served).subtracting(Self.scrapeSeries).sorted(), [], "queried but not served:\n\(page)")
    }

    /// The names a PromQL expression selects: identifiers outside label matchers, ranges, strings
    /// and grouping lists that are not function calls or keywords.
    func testSeriesNamesAreReadFromPromQL() {
        XCTAssertEqual(Self.seriesNames(in: #"sum by (le, protocol) (rate(a_bucket{x=~"y|z",code!="0"}[$__rate_interval])) / on (instance) group_left b > bool 0.5"#),
                       ["a_bucket", "b"])
        XCTAssertEqual(Self.seriesNames(in: #"histogram_quantile(0.99, sum without (pod) (rate(no_such_metric_total[5m]))) or vector(0)"#),
                       ["no_such_metric_total"])
    }

    // MARK: Reading the files

    func ruleExpressions() throws -> [String] {
        let text = try String(contentsOf: Self.rules, encoding: .utf8)
        return text.split(separator: "\n").compactMap { line in
            let trimmed = line.drop { $0 == " " }
            return trimmed.hasPrefix("expr: ") ? String(trimmed.dropFirst("expr: ".count)) : nil
        }
    }

    /// Every panel target's `expr` and every query variable's query.
    func dashboardExpressions() throws -> [String] {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: Self.dashboard))
        var found: [String] = []
        func walk(_ value: Any) {
            if let dictionary = value as? [String: Any] {
                for (key, child) in dictionary {
                    if key == "expr", let expression = child as? String { found.append(expression) }
                    if key == "query", let query = child as? [String: Any], let expression = query["query"] as? String {
                        found.append(expression)
                    } else {
                        walk(child)
                    }
                }
            } else if let array = value as? [Any] {
                array.forEach(walk)
            }
        }
        walk(object)
        // Grafana's label_values(metric, label) asks for the metric's series.
        return found.map { $0.replacingOccurrences(of: #"^label_values\(([a-z_:][a-z0-9_:]*), *[a-z_]+\)$"#, with: "$1", options: .regularExpression) }
    }

    static let keywords: Set<String> = ["by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset"]

    static func seriesNames(in expression: String) -> Set<String> {
        var text = expression
        for pattern in [#""[^"]*""#, #"\{[^}]*\}"#, #"\[[^\]]*\]"#, #"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)"#] {
            text = text.replacingOccurrences(of: pattern, with: " ", options: .regularExpression)
        }
        var names: Set<String> = []
        for match in text.matches(of: /[a-zA-Z_:][a-zA-Z0-9_:]*/) {
            let name = String(match.output)
            let after = text[match.range.upperBound...].drop { $0 == " " }
            if after.hasPrefix("(") || keywords.contains(name) { continue }
            names.insert(name)
        }
        return names
    }

    // MARK: The real binary

    /// /metrics of the binary after calls that fetch tokens from the stand-in provider and reach
    /// the stand-in Fleet Engine.
    func scrapeAfterCalls() throws -> String {
        let standIns = try StandInHost()
        defer { standIns.stop() }
        let sidecar = try SidecarProcess(["--provider-url", standIns.providerTemplate, "--upstream", "http://\(standIns.fleetEngineAddress)",
                                          "--admin-listen", "127.0.0.1:0"])
        defer { sidecar.stop() }
        for path in ["vehicles/v1", "vehicles/v1", "trips/t1", "no-such-collection"] {
            _ = try curl(["-o", "/dev/null", sidecar.baseURL + "/v1/providers/p/" + path])
        }
        let admin = try XCTUnwrap(sidecar.adminAddress, sidecar.log)
        let page = try httpGet("http://\(admin)/metrics").body
        XCTAssertTrue(page.contains(#"fleet_token_proxy_requests_total{protocol="http1",code="200"} 3"#), page)
        return page
    }
}
