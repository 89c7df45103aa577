@testable import FleetTokenProxyStandIns
import Foundation
import Logging
import Synchronization
import XCTest
@testable import FleetTokenProxy

/// `KeyFileSigner` as a token source (docs/CONTRACT.md §4a): a signed token comes back on the
/// loop, and a full signing queue answers at once as an overloaded provider would (503 / 14).
final class KeyFileSignerQueueTests: XCTestCase {
    var keyFile: String!

    override func setUpWithError() throws {
        keyFile = NSTemporaryDirectory() + "ftp-unit-key-\(UUID().uuidString.prefix(8)).json"
        try StandInServiceAccount(project: "p").writeKeyFile(to: keyFile)
    }

    override func tearDown() {
        if let keyFile { try? FileManager.default.removeItem(atPath: keyFile) }
    }

    func testASignedTokenComesBackOnTheLoopAndAFullQueueIsUnavailable() throws {
        let loop = try EventLoop()
        let workers = WorkerPool(threads: 1, queueLimit: 1)
        defer { workers.stop() }
        let signer = try KeyFileSigner(path: keyFile, loop: loop, workers: workers, lifetime: 600,
                                       clock: SystemClock(), logger: Logger(label: "test"))
        // The one worker is held, so the next fetch fills the queue and the one after is refused.
        let open = Mutex(false)
        XCTAssertTrue(workers.submit { while !open.withLock({ $0 }) { usleep(1000) } })
        while workers.queued > 0 { usleep(1000) }

        let loopThread = pthread_self()
        var signed: Result<FetchedToken, ProxyFailure>?
        var signedOnLoop = false
        signer.fetch(vehicle("v1")) { result in
            signed = result
            signedOnLoop = pthread_equal(pthread_self(), loopThread) != 0
            loop.stop()
        }
        var refused: Result<FetchedToken, ProxyFailure>?
        signer.fetch(vehicle("v2")) { refused = $0 }
        guard case .failure(let failure)? = refused else { return XCTFail("a fetch beyond the queue was not refused at once") }
        XCTAssertEqual(failure.httpStatus, 503)
        XCTAssertEqual(failure.grpcStatus, 14)

        open.withLock { $0 = true }
        let timeout = loop.schedule(after: 10) { loop.stop() }
        loop.run()
        timeout.cancel()
        let token = try XCTUnwrap(signed).get()
        XCTAssertTrue(signedOnLoop, "the completion runs on the loop's thread")
        XCTAssertEqual(token.claims?.authorizedIDs("vehicleid"), ["v1"])
        XCTAssertEqual(token.expiresAt - (token.issuedAt ?? 0), 600)
    }
}
