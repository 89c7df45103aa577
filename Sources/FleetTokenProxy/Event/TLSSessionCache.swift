import COpenSSL

/// TLS client sessions kept for resumption, per origin and bounded: at most `sessionsPerOrigin`
/// for each of at most `originLimit` origins, the oldest going first.
///
/// Invariant: the cache holds exactly one reference on every `SSL_SESSION` it lists, taken over
/// from the caller on `insert`, and gives each back exactly once through `release` — on
/// eviction, on expiry, or when the cache goes. A session is only ever listed under the origin
/// it was made with.
///
/// A kept session, TLS 1.3 ticket or TLS 1.2 session, is offered to every connection to its
/// origin until it expires or newer ones push it out, as nginx and HAProxy offer theirs. RFC 8446
/// §C.4 asks clients not to offer a ticket twice so that a passive observer cannot link two
/// connections; connections from one sidecar to one origin are linkable by their addresses
/// anyway, and offering a ticket once made a burst of dials (64 REST connections opened together)
/// pay 62 full handshakes where the proxies paid none.
///
/// Loop-thread only, like the connections whose handshakes fill it.
final class TLSSessionCache {
    /// Where a session may be offered again: the address dialled and the name the certificate
    /// was checked against (the SNI name).
    struct Origin: Hashable {
        var host: String
        var port: UInt16
        var serverName: String
    }

    /// One kept session.
    private struct Entry {
        var session: OpaquePointer
        /// Seconds since the epoch after which the server will not take it.
        var expires: Int
    }

    let originLimit: Int
    let sessionsPerOrigin: Int
    private let release: (OpaquePointer) -> Void
    /// Origins, least recently given a session first; each with its sessions, oldest first.
    private var origins: [(origin: Origin, entries: [Entry])] = []

    init(originLimit: Int = 8, sessionsPerOrigin: Int = 32, release: @escaping (OpaquePointer) -> Void = { SSL_SESSION_free($0) }) {
        precondition(originLimit > 0 && sessionsPerOrigin > 0)
        self.originLimit = originLimit
        self.sessionsPerOrigin = sessionsPerOrigin
        self.release = release
    }

    deinit {
        for (_, entries) in origins { for entry in entries { release(entry.session) } }
    }

    /// Sessions kept for `origin` now.
    func count(for origin: Origin) -> Int {
        origins.first { $0.origin == origin }?.entries.count ?? 0
    }

    /// Origins with sessions now.
    var originCount: Int { origins.count }

    /// Keeps `session` (taking over the caller's reference) for `origin`, evicting the oldest
    /// session of that origin, or the origin least recently given one, past the bounds.
    /// Returns false, taking nothing, when that very session is already listed.
    func insert(_ session: OpaquePointer, expires: Int, for origin: Origin) -> Bool {
        var entries: [Entry] = []
        if let i = origins.firstIndex(where: { $0.origin == origin }) {
            entries = origins.remove(at: i).entries
            if entries.contains(where: { $0.session == session }) {
                origins.append((origin, entries))
                return false
            }
        } else if origins.count == originLimit {
            for entry in origins.removeFirst().entries { release(entry.session) }
        }
        if entries.count == sessionsPerOrigin { release(entries.removeFirst().session) }
        entries.append(Entry(session: session, expires: expires))
        origins.append((origin, entries))
        return true
    }

    /// Calls `body` with the newest unexpired session for `origin`, if any (`SSL_set_session`
    /// takes its own reference there); it stays kept. Expired ones are released on the way.
    func withSession(for origin: Origin, now: Int, _ body: (OpaquePointer) -> Void) {
        guard let i = origins.firstIndex(where: { $0.origin == origin }) else { return }
        while let newest = origins[i].entries.last {
            if newest.expires <= now {
                origins[i].entries.removeLast()
                release(newest.session)
                continue
            }
            body(newest.session)
            break
        }
        if origins[i].entries.isEmpty { origins.remove(at: i) }
    }
}
