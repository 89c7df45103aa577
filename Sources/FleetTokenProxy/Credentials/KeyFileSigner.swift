import Logging

/// A token source that signs each entity's JWT locally with a service-account key
/// (`--signer key-file:PATH`, docs/CONTRACT.md §4a), beside `ProviderClient` behind the same
/// token cache: the cache's singleflight, refresh-ahead, backoff and scope check apply alike.
///
/// Signing costs about a millisecond of CPU, so it runs on `workers`; each result comes back
/// to the loop through `EventLoop.execute`, where the fetch's completion runs. Loop-bound:
/// not `Sendable`; only the immutable `SigningCredential` crosses to a worker.
final class KeyFileSigner: TokenFetcher {
    typealias Completion = (Result<FetchedToken, ProxyFailure>) -> Void

    let path: String
    private let loop: EventLoop
    private let workers: WorkerPool
    private let lifetime: Double
    private let clock: TokenClock
    private let logger: Logger
    /// The key signing the next token; replaced by `reload()`.
    private(set) var credential: SigningCredential
    /// Fetches handed to a worker, by id, until their result is back on the loop.
    private var pending: [UInt64: Completion] = [:]
    private var nextID: UInt64 = 0

    /// Reads the key file now; a refusal is the start-up line (exit 2).
    init(path: String, loop: EventLoop, workers: WorkerPool, lifetime: Double, clock: TokenClock, logger: Logger) throws(ConfigError) {
        self.path = path
        self.loop = loop
        self.workers = workers
        self.lifetime = lifetime
        self.clock = clock
        self.logger = logger
        credential = try ServiceAccountKeyFile.load(path)
        logger.notice("signing key loaded", metadata: ["file": "\(path)", "account": "\(credential.account)", "kid": "\(credential.keyID)"])
    }

    func fetch(_ key: EntityKey, completion: @escaping Completion) {
        nextID &+= 1
        let id = nextID
        pending[id] = completion
        let credential = credential
        let wallNow = clock.wallNow
        let lifetime = lifetime
        let back = LoopReference(self)
        let loop = loop
        let queued = workers.submit {
            let result = credential.mint(for: key, wallNow: wallNow, lifetime: lifetime)
            loop.execute { back.object?.finish(id, result) }
        }
        if !queued {
            pending[id] = nil
            completion(.failure(.providerUnavailable(
                "too many tokens waiting to be signed (at most \(workers.queueLimit)); try again shortly")))
        }
    }

    private func finish(_ id: UInt64, _ result: Result<FetchedToken, ProxyFailure>) {
        pending.removeValue(forKey: id)?(result)
    }

    /// Re-reads the key file (SIGHUP): the next token is signed with the new key, tokens
    /// already cached are kept. A file that is missing, too open or not a usable key leaves the
    /// previous key in use, with one error line.
    func reload() {
        do {
            let fresh = try ServiceAccountKeyFile.load(path)
            credential = fresh
            logger.notice("signing key reloaded", metadata: ["file": "\(path)", "account": "\(fresh.account)", "kid": "\(fresh.keyID)"])
        } catch {
            logger.error("signing key not reloaded; keeping the previous key",
                         metadata: ["error": "\(error.message)", "kid": "\(credential.keyID)"])
        }
    }
}

/// A weak reference to a loop-bound object, carried by a worker's job back to the loop.
///
/// `@unchecked Sendable`: `object` is read only inside work the loop runs (`EventLoop.execute`),
/// on the thread that owns the object; a worker only carries the box.
private final class LoopReference<Object: AnyObject>: @unchecked Sendable {
    weak var object: Object?
    init(_ object: Object) { self.object = object }
}
