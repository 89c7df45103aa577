@testable import FleetTokenProxy
@testable import FleetTokenProxyStandIns
import Foundation
import XCTest

/// The token lifecycle through the real binary, with the stand-in provider slowed, failed or
/// made to answer wrong tokens, and counted.
final class TokenLifecycleTests: SidecarTestCase {
    /// Runs `body` on the stand-ins' loop thread.
    func onStandIns<T>(_ body: @escaping (StandInProvider, StandInFleetEngine) -> T) -> T {
        standIns.sync { body(self.standIns.provider, self.standIns.fleetEngine) }
    }

    struct Answer {
        var status: Int
        var seconds: Double
    }

    /// GETs `paths` one after the other on one keep-alive connection (one curl process).
    func get(_ paths: [String]) throws -> [Answer] {
        let args = ["-w", "%{http_code} %{time_total}\n"] + paths.flatMap { ["-o", "/dev/null", sidecar.baseURL + $0] }
        let result = try curl(args)
        XCTAssertEqual(result.status, 0, "curl failed: \(result.stderr)")
        return result.stdout.split(separator: "\n").map { line in
            let fields = line.split(separator: " ")
            return Answer(status: Int(fields[0]) ?? -1, seconds: Double(fields.count > 1 ? fields[1] : "") ?? -1)
        }
    }

    /// One GET: status and body.
    func get(_ path: String) throws -> (status: Int, body: String) {
        let result = try curl(["-w", "\n%{http_code}", sidecar.baseURL + path])
        XCTAssertEqual(result.status, 0, "curl failed: \(result.stderr)")
        var lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        let status = Int(lines.popLast() ?? "") ?? -1
        return (status, lines.joined(separator: "\n"))
    }

    /// Calls for `path` back to back until `seconds` have passed.
    func hotLoop(_ path: String, for seconds: Double) throws -> [Answer] {
        var answers: [Answer] = []
        let end = Date().addingTimeInterval(seconds)
        while Date() < end { answers += try get(Array(repeating: path, count: 50)) }
        return answers
    }

    // MARK: Refresh ahead

    func testSteadyCallsForOneVehicleAcrossSeveralTokensNeverWaitForTheProvider() throws {
        // Eight-second tokens: refresh from 4 s (spread to 5 s), floor at 6 s. The provider
        // takes half a second, so a call that waited for it would take that long.
        onStandIns { provider, _ in
            provider.tokenLifetime = 8
            provider.behaviour = .delay(0.5)
        }
        try startSidecar()
        let first = try get(["/v1/providers/p1/vehicles/steady"])
        XCTAssertEqual(first.first?.status, 200)
        XCTAssertGreaterThanOrEqual(first.first?.seconds ?? 0, 0.45, "the first call waits for the first token")

        var answers: [Answer] = []
        let end = Date().addingTimeInterval(18)
        while Date() < end {
            answers += try get(["/v1/providers/p1/vehicles/steady"])
            usleep(150_000)
        }
        XCTAssertGreaterThan(answers.count, 60)
        XCTAssertEqual(answers.filter { $0.status != 200 }.count, 0, "\(answers.map(\.status))")
        let slowest = answers.map(\.seconds).max() ?? 0
        XCTAssertLessThan(slowest, 0.3, "a call waited for the provider")
        let fetches = onStandIns { provider, _ in provider.fetchesByEntity[EntityKey(provider: "p1", type: .vehicle, id: "steady")] ?? 0 }
        XCTAssertGreaterThanOrEqual(fetches, 4, "the token was not refreshed ahead of its expiry")
        // A new token every 3 to 5 s (its iat is rounded down to the second): at most 7 here.
        XCTAssertLessThanOrEqual(fetches, 8, "refreshed more than once per token")
        XCTAssertEqual(onStandIns { $1.statistics.rejected }, 0)
    }

    func testRecentlyUsedVehicleIsRefreshedOnATimerUnlessRefreshIsLazy() throws {
        onStandIns { provider, _ in provider.tokenLifetime = 8 }
        try startSidecar()
        let lazy = try SidecarProcess([
            "--upstream", "http://\(standIns.fleetEngineAddress)", "--provider-url", standIns.providerTemplate, "--lazy-refresh",
        ])
        defer { lazy.stop() }
        XCTAssertEqual(try get("/v1/providers/p1/vehicles/timed").status, 200)
        let lazyCall = try curl(["-o", "/dev/null", "-w", "%{http_code}", lazy.baseURL + "/v1/providers/p1/vehicles/lazy"])
        XCTAssertEqual(lazyCall.stdout, "200")

        // No calls for 6 s: the refresh point (4 to 5 s into the token) passes, the next one does not.
        sleep(6)
        let fetched = onStandIns { provider, _ in provider.fetchesByEntity }
        XCTAssertEqual(fetched[EntityKey(provider: "p1", type: .vehicle, id: "timed")], 2, "no refresh ahead on a timer")
        XCTAssertEqual(fetched[EntityKey(provider: "p1", type: .vehicle, id: "lazy")], 1, "--lazy-refresh still refreshed on a timer")
    }

    // MARK: Backoff

    func testFailingProviderUnderAHotLoopReceivesOnlyTheBackoffProbes() throws {
        onStandIns { provider, _ in
            provider.behaviour = .status(503)
            provider.recordsFetchTimes = true
        }
        try startSidecar()
        let answers = try hotLoop("/v1/providers/p1/vehicles/hot", for: 3.5)
        XCTAssertGreaterThan(answers.count, 200, "the loop was not hot")
        XCTAssertTrue(answers.allSatisfy { $0.status == 503 }, "\(Set(answers.map(\.status)))")
        XCTAssertLessThan(answers.map(\.seconds).max() ?? 1, 0.2, "a call waited during backoff")

        let times = onStandIns { provider, _ in provider.fetchTimes[EntityKey(provider: "p1", type: .vehicle, id: "hot")] ?? [] }
        // Steps of 1, 2, 4 s, each shortened by up to half at random: at most 4 fetches in 3.5 s.
        XCTAssertGreaterThanOrEqual(times.count, 2, "no probe after the first step")
        XCTAssertLessThanOrEqual(times.count, 4, "more fetches than backoff probes: \(times)")
        for (n, (earlier, later)) in zip(times, times.dropFirst()).enumerated() {
            let step = Double(1 << n)
            XCTAssertGreaterThanOrEqual(later - earlier, step / 2 - 0.05, "probe \(n + 1) came too soon: \(times)")
        }
        XCTAssertEqual(onStandIns { _, fleetEngine in fleetEngine.statistics.accepted + fleetEngine.statistics.rejected }, 0)
    }

    func testRecoveredProviderIsUsedAgainWithinOneStep() throws {
        onStandIns { provider, _ in provider.behaviour = .status(500) }
        try startSidecar(["--provider-backoff-max", "2"])
        _ = try hotLoop("/v1/providers/p1/vehicles/phoenix", for: 3.5)  // the step is at its 2 s cap
        let failedFetches = onStandIns { provider, _ in provider.totalFetches }

        onStandIns { provider, _ in provider.behaviour = .normal }
        let recovered = Date()
        var status = 0
        while status != 200 && Date().timeIntervalSince(recovered) < 5 {
            status = try get(["/v1/providers/p1/vehicles/phoenix"]).first?.status ?? -1
        }
        let waited = Date().timeIntervalSince(recovered)
        XCTAssertEqual(status, 200)
        XCTAssertLessThanOrEqual(waited, 2.3, "a recovered provider must be used within one step")
        XCTAssertEqual(onStandIns { provider, _ in provider.totalFetches }, failedFetches + 1, "one probe brought the token")
        XCTAssertEqual(try get(["/v1/providers/p1/vehicles/phoenix"]).first?.status, 200)
    }

    func testBackoffMaxFlagIsReadFromTheEnvironmentAndChecked() throws {
        sidecar = try SidecarProcess(
            ["--upstream", "http://\(standIns.fleetEngineAddress)", "--provider-url", standIns.providerTemplate],
            environment: ["FLEET_TOKEN_PROXY_PROVIDER_BACKOFF_MAX": "1"])
        onStandIns { provider, _ in provider.behaviour = .status(503) }
        _ = try hotLoop("/v1/providers/p1/vehicles/env", for: 3.2)
        // With a 1 s cap the steps stay at most a second: 0, ≤1, ≤2, ≤3 and more.
        XCTAssertGreaterThanOrEqual(onStandIns { provider, _ in provider.totalFetches }, 4)
        sidecar.stop()
        sidecar = nil

        let refused = try runCommand(SidecarProcess.binary.path, [
            "serve", "--provider-url", standIns.providerTemplate, "--provider-backoff-max", "0",
        ])
        XCTAssertEqual(refused.status, 2)
        XCTAssertTrue(refused.stderr.contains("--provider-backoff-max"), refused.stderr)
    }

    // MARK: Wrong tokens

    func testWrongEntityTokenIsRefusedWith502AndNeverCached() throws {
        onStandIns { provider, _ in provider.behaviour = .wrongEntity }
        try startSidecar(["--provider-backoff-max", "1"])
        let refused = try get("/v1/providers/p1/vehicles/mine")
        XCTAssertEqual(refused.status, 502)
        XCTAssertTrue(refused.body.contains(#""status":"UNAVAILABLE""#), refused.body)
        XCTAssertTrue(refused.body.contains(#"token provider answered a token for vehicle \"not-mine\" when asked for vehicle \"mine\""#),
                      refused.body)

        usleep(1_100_000)  // past the one-second step: the provider is asked again
        XCTAssertEqual(try get("/v1/providers/p1/vehicles/mine").status, 502)
        let key = EntityKey(provider: "p1", type: .vehicle, id: "mine")
        XCTAssertEqual(onStandIns { provider, _ in provider.fetchesByEntity[key] }, 2, "the wrong token was cached")
        XCTAssertEqual(onStandIns { $1.statistics.callsByEntityType.values.reduce(0, +) }, 0, "a wrong token reached Fleet Engine")

        onStandIns { provider, _ in provider.behaviour = .normal }
        usleep(1_100_000)
        XCTAssertEqual(try get("/v1/providers/p1/vehicles/mine").status, 200)
        XCTAssertEqual(onStandIns { $1.statistics.acceptedByEntity[key] }, 1)
    }

    func testWrongAudienceAndWrongFleetTokensAreRefusedWith502() throws {
        onStandIns { provider, _ in provider.behaviour = .wrongAudience }
        try startSidecar()
        let audience = try get("/v1/providers/p1/trips/t1")
        XCTAssertEqual(audience.status, 502)
        XCTAssertTrue(audience.body.contains("audience"), audience.body)

        onStandIns { provider, _ in provider.behaviour = .wrongEntity }
        let fleet = try get("/v1/providers/p1/vehicles")
        XCTAssertEqual(fleet.status, 502)
        XCTAssertTrue(fleet.body.contains("when asked for the fleet"), fleet.body)
        XCTAssertEqual(onStandIns { $1.statistics.callsByEntityType.values.reduce(0, +) }, 0)
    }

    // MARK: Bounds

    func testLeastRecentlyUsedEntityIsEvictedFirstUnderMaxEntities() throws {
        try startSidecar(["--max-entities", "3"])
        func vehicle(_ id: String) -> String { "/v1/providers/p1/vehicles/\(id)" }
        XCTAssertEqual(try get([vehicle("a"), vehicle("b"), vehicle("c"), vehicle("a"), vehicle("d")]).map(\.status),
                       [200, 200, 200, 200, 200])
        // b was the least recently used when d came in.
        XCTAssertEqual(try get([vehicle("a"), vehicle("c"), vehicle("d")]).map(\.status), [200, 200, 200])
        XCTAssertEqual(onStandIns { provider, _ in provider.totalFetches }, 4, "a, c or d was evicted instead of b")
        XCTAssertEqual(try get([vehicle("b")]).map(\.status), [200])
        let fetched = onStandIns { provider, _ in provider.fetchesByEntity }
        XCTAssertEqual(fetched[EntityKey(provider: "p1", type: .vehicle, id: "b")], 2)
        XCTAssertEqual(fetched[EntityKey(provider: "p1", type: .vehicle, id: "a")], 1)
        // b came back by evicting a (least recently used of a, c, d after the second round).
        XCTAssertEqual(try get([vehicle("a")]).map(\.status), [200])
        XCTAssertEqual(onStandIns { provider, _ in provider.fetchesByEntity[EntityKey(provider: "p1", type: .vehicle, id: "a")] }, 2)
    }

    // MARK: Revocation

    func testStandInFleetEngineAnswers401ForTheNextCallsAndForRevokedTokens() throws {
        let minter = JWTMinter(keyPair: standIns.keyPair)
        let key = EntityKey(provider: "p1", type: .vehicle, id: "v1")
        let token = try minter.mint(for: key, issuedAt: Date().timeIntervalSince1970)
        let url = "http://\(standIns.fleetEngineAddress)/v1/providers/p1/vehicles/v1"
        func status() throws -> String {
            try curl(["-o", "/dev/null", "-w", "%{http_code}", "-H", "Authorization: Bearer \(token)", url]).stdout
        }
        XCTAssertEqual(try status(), "200")
        onStandIns { $1.unauthenticatedCalls = 2 }
        XCTAssertEqual([try status(), try status(), try status()], ["401", "401", "200"])
        onStandIns { $1.revokedTokens = [token] }
        XCTAssertEqual(try status(), "401")
        let body = try curl(["-H", "Authorization: Bearer \(token)", url]).stdout
        XCTAssertTrue(body.contains("UNAUTHENTICATED"), body)
        XCTAssertFalse(body.contains(token))
        XCTAssertEqual(onStandIns { $1.statistics.rejectionsByReason[StandInFleetEngine.revokedReason] }, 4)
    }

    func testUnauthorizedFromFleetEngineIsHealedWithOneRefetch() throws {
        try startSidecar()
        let key = EntityKey(provider: "p1", type: .vehicle, id: "revoked")
        XCTAssertEqual(try get("/v1/providers/p1/vehicles/revoked").status, 200)
        onStandIns { $1.unauthenticatedCalls = 1 }
        let healed = try get("/v1/providers/p1/vehicles/revoked")
        XCTAssertEqual(healed.status, 200, healed.body)
        XCTAssertEqual(onStandIns { provider, _ in provider.fetchesByEntity[key] }, 2)
        XCTAssertEqual(onStandIns { $1.statistics.rejectionsByReason[StandInFleetEngine.revokedReason] }, 1)
        XCTAssertEqual(try get("/v1/providers/p1/vehicles/revoked").status, 200)
        XCTAssertEqual(onStandIns { provider, _ in provider.fetchesByEntity[key] }, 2, "the new token was not kept")
    }
}
