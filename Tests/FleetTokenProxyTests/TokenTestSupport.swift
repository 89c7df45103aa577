import Foundation
@testable import FleetTokenProxy

/// A clock the test moves by hand. Monotonic and wall time start far apart so a mix-up
/// between them shows.
final class ManualClock: TokenClock {
    var monotonicNow: Double
    var wallNow: Double

    init(monotonicNow: Double = 1_000, wallNow: Double = 1_800_000_000) {
        self.monotonicNow = monotonicNow
        self.wallNow = wallNow
    }

    /// Moves both clocks forward together, as real time does.
    func advance(by seconds: Double) {
        monotonicNow += seconds
        wallNow += seconds
    }
}

/// Records every fetch and completes it only when the test says so, unless an `autoAnswer`
/// is set, in which case it completes synchronously inside `fetch`.
final class FakeFetcher: TokenFetcher {
    struct Call {
        var key: EntityKey
        var completion: (Result<FetchedToken, ProxyFailure>) -> Void
    }

    private(set) var calls: [Call] = []
    var autoAnswer: ((EntityKey) -> Result<FetchedToken, ProxyFailure>)?

    var fetchedKeys: [EntityKey] { calls.map(\.key) }

    func fetch(_ key: EntityKey, completion: @escaping (Result<FetchedToken, ProxyFailure>) -> Void) {
        calls.append(Call(key: key, completion: completion))
        if let autoAnswer { completion(autoAnswer(key)) }
    }

    func complete(_ index: Int, with result: Result<FetchedToken, ProxyFailure>) {
        calls[index].completion(result)
    }
}

/// Results every completion received, in order.
final class Answers {
    private(set) var results: [Result<String, ProxyFailure>] = []

    var completion: (Result<String, ProxyFailure>) -> Void {
        { self.results.append($0) }
    }

    var tokens: [String] {
        results.compactMap { if case .success(let token) = $0 { return token } else { return nil } }
    }

    var failures: [ProxyFailure] {
        results.compactMap { if case .failure(let failure) = $0 { return failure } else { return nil } }
    }
}

func vehicle(_ id: String) -> EntityKey {
    EntityKey(provider: "proj", type: .vehicle, id: id)
}

func base64URL(_ bytes: [UInt8]) -> String {
    Data(bytes).base64EncodedString()
        .replacingOccurrences(of: "+", with: "-")
        .replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}

/// An unsigned-looking compact JWT carrying `payload` (JSON text).
func makeJWT(payload: String, header: String = #"{"alg":"RS256","typ":"JWT","kid":"k1"}"#) -> String {
    base64URL(Array(header.utf8)) + "." + base64URL(Array(payload.utf8)) + "." + base64URL([1, 2, 3, 250, 251, 252])
}

func makeJWT(exp: Double?, iat: Double? = nil, vehicleID: String = "v1") -> String {
    var claims = [#""iss":"sa@p.iam.gserviceaccount.com""#, #""aud":"https://fleetengine.googleapis.com/""#]
    if let iat { claims.append(#""iat":\#(Int(iat))"#) }
    if let exp { claims.append(#""exp":\#(Int(exp))"#) }
    claims.append(#""authorization":{"vehicleid":"\#(vehicleID)"}"#)
    return makeJWT(payload: "{" + claims.joined(separator: ",") + "}")
}

/// A `Scheduler` driven by a `ManualClock`: work runs only when the test advances time, each
/// piece at its own deadline (the clock set to it), earliest first.
final class FakeScheduler: Scheduler {
    final class Work: ScheduledWork {
        let deadline: Double
        fileprivate var work: (() -> Void)?
        init(deadline: Double, work: @escaping () -> Void) {
            self.deadline = deadline
            self.work = work
        }
        func cancel() { work = nil }
        var isPending: Bool { work != nil }
    }

    let clock: ManualClock
    private var scheduled: [Work] = []

    init(clock: ManualClock) { self.clock = clock }

    @discardableResult
    func schedule(after seconds: Double, _ work: @escaping () -> Void) -> ScheduledWork {
        precondition(seconds >= 0, "scheduled \(seconds) s in the past")
        let item = Work(deadline: clock.monotonicNow + seconds, work: work)
        scheduled.append(item)
        return item
    }

    /// Deadlines of the work not yet run nor cancelled, earliest first.
    var pendingDeadlines: [Double] {
        scheduled.filter(\.isPending).map(\.deadline).sorted()
    }

    /// Moves both clocks forward by `seconds`, running the work that falls due on the way.
    func advance(by seconds: Double) {
        let end = clock.monotonicNow + seconds
        while true {
            scheduled.removeAll { !$0.isPending }
            guard let next = scheduled.filter({ $0.deadline <= end }).min(by: { $0.deadline < $1.deadline }) else { break }
            clock.advance(by: max(0, next.deadline - clock.monotonicNow))
            let work = next.work
            next.work = nil
            work?()
        }
        clock.advance(by: end - clock.monotonicNow)
    }
}

/// Numbers for the cache's jitter, handed out in order and then repeated from the start.
final class FixedRandom {
    private let values: [Double]
    private var next = 0

    init(_ values: [Double]) {
        precondition(!values.isEmpty)
        self.values = values
    }

    var source: () -> Double {
        {
            defer { self.next = (self.next + 1) % self.values.count }
            return self.values[self.next]
        }
    }
}
