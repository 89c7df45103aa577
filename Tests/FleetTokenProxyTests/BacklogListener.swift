import Foundation
import XCTest
import Synchronization
@testable import FleetTokenProxy

#if canImport(Glibc)
import Glibc
#endif

/// A loopback TCP listener that never accepts: the kernel completes the handshakes, so dials
/// succeed, and nothing is ever read or answered (an upstream that says nothing).
final class BacklogListener {
    private let fd: Int32
    let origin: Origin

    init?() {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr)
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let fd = fd
        let rc = withUnsafeMutablePointer(to: &sin) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { ptr -> Int32 in
                guard bind(fd, ptr, len) == 0, listen(fd, 64) == 0 else { return -1 }
                return getsockname(fd, ptr, &len)
            }
        }
        guard rc == 0 else {
            close(fd)
            return nil
        }
        origin = Origin(scheme: .http, host: "127.0.0.1", port: UInt16(bigEndian: sin.sin_port), hostHeader: "test")
    }

    deinit { close(fd) }

    /// While on, the connection `answerPings` accepted acknowledges PINGs.
    final class Switch: Sendable {
        private let state = Mutex(true)
        var isOn: Bool { state.withLock { $0 } }
        func turnOff() { state.withLock { $0 = false } }
    }
    let answering = Switch()

    /// Accepts one connection on a thread of its own and plays a minimal h2c server on it:
    /// SETTINGS, SETTINGS ACK, and a PING ACK for every PING while `answering` (all else is
    /// read and ignored); `calm`: a GOAWAY ENHANCE_YOUR_CALM instead of each PING ACK.
    func answerPings(calm: Bool = false) {
        let fd = fd
        let thread = Thread { [answering] in
            let peer = accept(fd, nil, nil)
            guard peer >= 0 else { return }
            defer { close(peer) }
            func send(_ bytes: [UInt8]) { _ = bytes.withUnsafeBytes { Glibc.send(peer, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
            send([0, 0, 0, 4, 0, 0, 0, 0, 0]) // SETTINGS, empty
            var input: [UInt8] = []
            var prefaceLeft = 24
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = chunk.withUnsafeMutableBytes { recv(peer, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { return }
                input += chunk[0..<n]
                let skip = min(prefaceLeft, input.count)
                input.removeFirst(skip)
                prefaceLeft -= skip
                while input.count >= 9 {
                    let length = Int(input[0]) << 16 | Int(input[1]) << 8 | Int(input[2])
                    guard input.count >= 9 + length else { break }
                    let type = input[3], flags = input[4]
                    let payload = Array(input[9..<(9 + length)])
                    input.removeFirst(9 + length)
                    if type == 4 && flags & 1 == 0 { send([0, 0, 0, 4, 1, 0, 0, 0, 0]) }
                    if type == 6 && flags & 1 == 0 && answering.isOn {
                        send(calm ? [0, 0, 8, 7, 0, 0, 0, 0, 0] + [0, 0, 0, 0, 0, 0, 0, 0xb] : [0, 0, 8, 6, 1, 0, 0, 0, 0] + payload)
                    }
                }
            }
        }
        thread.start()
    }
}

/// A test case with a fresh loop and `BacklogListener` for each test.
class BacklogListenerTestCase: XCTestCase {
    var loop: EventLoop!
    var listener: BacklogListener!

    override func setUpWithError() throws {
        loop = try EventLoop()
        listener = try XCTUnwrap(BacklogListener())
    }

    override func tearDown() {
        listener = nil
        loop = nil
    }
}

extension EventLoop {
    /// Checks that a pool's one idle connection (counted by `connections`) is still open after
    /// 0.6 s, longer than the old bound of 0.2 s the test set, and closed at about 0.9 s, the
    /// idle timeout the test set.
    func expectIdleCloseAtPointNine(_ connections: @escaping () -> Int, file: StaticString = #filePath, line: UInt = #line) {
        let idleSince = ContinuousClock.now
        run(timeout: 0.6) { false }
        XCTAssertEqual(connections(), 1, "idle three old bounds long, still open", file: file, line: line)
        run(timeout: 2) { connections() == 0 }
        XCTAssertEqual(connections(), 0, "closed once idle for the idle timeout", file: file, line: line)
        let idled = ContinuousClock.now - idleSince
        XCTAssertGreaterThan(idled, .milliseconds(800), file: file, line: line)
        XCTAssertLessThan(idled, .milliseconds(1300), file: file, line: line)
    }

    /// The least value `count` took while the loop ran for `seconds`, sampled every 10 ms.
    func fewest(over seconds: Double, of count: @escaping () -> Int) -> Int {
        var fewest = Int.max
        run(timeout: seconds) {
            fewest = min(fewest, count())
            return false
        }
        return fewest
    }

    /// Runs the loop until `done` or `timeout` seconds passed. Its timers are cancelled when it
    /// returns, so none stops a later run early.
    func run(timeout: Double, until done: @escaping () -> Bool) {
        var next: ScheduledWork?
        func check() {
            if done() { stop() } else { next = schedule(after: 0.01) { check() } }
        }
        next = schedule(after: 0) { check() }
        let deadline = schedule(after: timeout) { [unowned self] in stop() }
        run()
        deadline.cancel()
        next?.cancel()
    }
}
