/// Why a listener is not accepting, as a value: two reasons, each set and cleared on its own,
/// and the listener accepts only while neither holds (docs/CONTRACT.md §7).
///
/// - the connection limit: `ProxyServer` holds its listeners off while 4096 connections are
///   open, until one closes;
/// - a pause after `accept()` failed for want of a descriptor or of memory (EMFILE, ENFILE,
///   ENOBUFS, ENOMEM, docs/CONTRACT.md §5): the pending connection stays in the kernel's
///   backlog, and calling `accept()` again at once fails again at once — the loop would spin.
///   The pause starts at `firstPause` and doubles with each failure up to `longestPause`; it
///   ends when its time is up or when a descriptor is freed (a client connection closed),
///   whichever comes first, and it starts from `firstPause` again once an accept succeeds.
///   nginx (`ngx_disable_accept_events`) and HAProxy (`limit_listener`) do the same.
///
/// | event            | condition                 | effect                                      |
/// |------------------|---------------------------|---------------------------------------------|
/// | limitReached     | not paused                | stop accepting                              |
/// | limitCleared     | not pausing after failure | start accepting                             |
/// | acceptFailed     | not pausing after failure | stop accepting (unless at the limit); pause for `nextPause`, which doubles |
/// | pauseEnded       | pausing, not at the limit | start accepting                             |
/// | descriptorFreed  | pausing, not at the limit | start accepting (the timer is cancelled)    |
/// | accepted         |                           | the next pause is `firstPause` again        |
///
/// Every other pair changes nothing: a reason that clears while the other holds leaves the
/// listener off.
struct AcceptPause: Equatable {
    static let firstPause: Double = 0.010
    static let longestPause: Double = 1.0

    /// What the listener does with its socket after an event.
    enum Effect: Equatable {
        case none
        case stopAccepting
        case startAccepting
    }

    /// Open connections are at the limit.
    private(set) var atConnectionLimit = false
    /// Pausing after a failed accept; the timer that ends it is armed.
    private(set) var pausingAfterFailure = false
    /// How long the pause after the next failure lasts.
    private(set) var nextPause = Self.firstPause

    /// True while either reason holds.
    var isPaused: Bool { atConnectionLimit || pausingAfterFailure }

    mutating func limitReached() -> Effect {
        defer { atConnectionLimit = true }
        return isPaused ? .none : .stopAccepting
    }

    mutating func limitCleared() -> Effect {
        guard atConnectionLimit else { return .none }
        atConnectionLimit = false
        return pausingAfterFailure ? .none : .startAccepting
    }

    /// `accept()` failed for a reason that a retry at once would meet again. `pause` is how
    /// long to wait before trying again (arm a timer that calls `pauseEnded`), nil when a pause
    /// is under way already (another listener's failure in the same turn, say).
    mutating func acceptFailed() -> (effect: Effect, pause: Double?) {
        guard !pausingAfterFailure else { return (.none, nil) }
        let effect: Effect = atConnectionLimit ? .none : .stopAccepting
        pausingAfterFailure = true
        let pause = nextPause
        nextPause = min(nextPause * 2, Self.longestPause)
        return (effect, pause)
    }

    /// The pause's timer fired.
    mutating func pauseEnded() -> Effect {
        guard pausingAfterFailure else { return .none }
        pausingAfterFailure = false
        return atConnectionLimit ? .none : .startAccepting
    }

    /// A descriptor was freed (a client connection closed): the pause ends early, since the
    /// next accept may succeed now. The caller cancels the pause's timer.
    mutating func descriptorFreed() -> Effect { pauseEnded() }

    /// A connection was accepted: descriptors are to be had again.
    @inline(__always)
    mutating func accepted() {
        if nextPause != Self.firstPause { nextPause = Self.firstPause }
    }
}
