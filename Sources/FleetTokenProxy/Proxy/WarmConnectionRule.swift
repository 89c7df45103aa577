/// How an upstream pool that carries calls keeps a ready connection for the next one
/// (docs/CONTRACT.md §6): when `--upstream-idle-timeout` would close its last connection, the
/// replacement is dialed first (resuming TLS) and the old one closes once the replacement is
/// ready; when the server closes its last connection, a replacement is dialed at once unless
/// that connection lived less than `minimumAge` (a server that closes every new connection
/// must not turn the pool into a dialing loop). Extra connections close when idle, as before.
/// Decisions only: the pool supplies the facts and keeps which connection replaces which.
struct WarmConnectionRule: Equatable {
    /// A connection lost younger than this is not replaced before a call needs one.
    static let minimumAge = H2Keepalive.minimumAgeToReplace

    /// The pool carries calls: it was warmed once serving (`Sidecar.warmUpstreamSoon`).
    private(set) var keepsWarm = false

    mutating func warmed() {
        keepsWarm = true
    }

    enum IdleAction: Equatable {
        /// Close the connection now.
        case close
        /// Dial the replacement; keep this connection, serving calls, until it is ready.
        case replaceFirst
        /// Its replacement is being dialed already: keep it until that is ready (or fails,
        /// and the next bound reached tries again).
        case keep
    }

    /// A connection stayed idle for the idle timeout. `others`: the pool's other connections,
    /// open or being dialed; `replacing`: a replacement for this one is being dialed.
    func idleBoundReached(others: Int, replacing: Bool) -> IdleAction {
        if replacing { return .keep }
        return keepsWarm && others == 0 ? .replaceFirst : .close
    }

    /// A connection the sidecar did not mean to close went away (the server closed it, the
    /// path broke) after `age` seconds open; `left`: connections the pool still has. True when
    /// a replacement should be dialed now.
    func replacesLost(age: Double, left: Int) -> Bool {
        keepsWarm && left == 0 && age >= Self.minimumAge
    }
}
