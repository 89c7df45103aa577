import Foundation
import Synchronization
import XCTest
@testable import FleetTokenProxy

/// `EventLoop.execute(_:)` from other threads: every piece of work runs once, on the loop's
/// thread, however many threads hand work over at the same time.
final class EventLoopTests: XCTestCase {
    func testWorkFromManyThreadsRunsOnceEachOnTheLoopThread() throws {
        let loop = try EventLoop()
        let threads = 4, perThread = 2_000
        let ran = Mutex<[Int]>(Array(repeating: 0, count: threads * perThread))
        let offLoop = Mutex(0)
        let loopThread = pthread_self()
        let finished = Mutex(0)

        for t in 0..<threads {
            let thread = Thread {
                for i in 0..<perThread {
                    let n = t * perThread + i
                    loop.execute {
                        if pthread_equal(pthread_self(), loopThread) == 0 { offLoop.withLock { $0 += 1 } }
                        ran.withLock { $0[n] += 1 }
                    }
                }
                // The last thread to finish stops the loop, after everything it queued.
                if finished.withLock({ $0 += 1; return $0 }) == threads { loop.execute { loop.stop() } }
            }
            thread.start()
        }
        // Something for the loop to wait on until the stop arrives.
        let keepAlive = loop.schedule(after: 30) { XCTFail("the loop was not stopped"); loop.stop() }
        loop.run()
        keepAlive.cancel()

        XCTAssertEqual(offLoop.withLock { $0 }, 0)
        let counts = ran.withLock { $0 }
        XCTAssertEqual(counts.filter { $0 != 1 }.count, 0, "work that did not run exactly once")
    }
}
