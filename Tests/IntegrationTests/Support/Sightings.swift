import Foundation

/// Values a scripted upstream has seen (tokens, entities), across its loop thread and the
/// test's: so a script can treat the first sighting of each differently.
final class Sightings: @unchecked Sendable {
    private let lock = NSLock()
    private var seen: Set<String> = []

    /// True the first time `value` is seen.
    func first(_ value: String) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return seen.insert(value).inserted
    }
}
