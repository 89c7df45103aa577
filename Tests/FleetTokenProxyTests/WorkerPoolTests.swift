import Foundation
import Synchronization
import XCTest
@testable import FleetTokenProxy

/// The signing workers' pool (docs/CONTRACT.md §4a): every job runs once off the loop, its result
/// comes back to the loop through `execute`, and a full queue refuses more work.
final class WorkerPoolTests: XCTestCase {
    func testEveryJobRunsOnceAndItsResultReachesTheLoop() throws {
        let loop = try EventLoop()
        let pool = WorkerPool(threads: 3, queueLimit: 1000)
        defer { pool.stop() }
        let ranOn = Mutex<[UInt]>([])
        let delivered = LoopCounter(until: 500) { loop.stop() }
        for _ in 0..<500 {
            XCTAssertTrue(pool.submit {
                ranOn.withLock { $0.append(UInt(pthread_self())) }
                loop.execute { delivered.add() }
            })
        }
        let timeout = loop.schedule(after: 10) { loop.stop() }
        loop.run()
        timeout.cancel()
        XCTAssertEqual(delivered.count, 500)
        let threads = ranOn.withLock { $0 }
        XCTAssertEqual(threads.count, 500)
        XCTAssertFalse(threads.contains(UInt(pthread_self())), "no job ran on the loop's thread")
    }

    func testAFullQueueRefusesWorkAndAStoppedPoolTakesNone() {
        let open = Mutex(false)
        let pool = WorkerPool(threads: 1, queueLimit: 2)
        // The one worker holds its first job until the gate opens, so the queue fills behind it.
        XCTAssertTrue(pool.submit { while !open.withLock({ $0 }) { usleep(1000) } })
        let deadline = Date().addingTimeInterval(5)
        while pool.queued > 0 && Date() < deadline { usleep(1000) }
        let accepted = (0..<5).filter { _ in pool.submit {} }.count
        XCTAssertEqual(accepted, 2, "the queue holds queueLimit jobs")
        open.withLock { $0 = true }
        pool.stop()
        XCTAssertFalse(pool.submit {}, "a stopped pool takes no work")
    }
}

/// Counts deliveries; touched only on the loop thread (`@unchecked Sendable` to be carried
/// there inside `execute`'s closure).
private final class LoopCounter: @unchecked Sendable {
    private(set) var count = 0
    private let target: Int
    private let reached: () -> Void
    init(until target: Int, _ reached: @escaping () -> Void) {
        self.target = target
        self.reached = reached
    }
    func add() {
        count += 1
        if count == target { reached() }
    }
}
