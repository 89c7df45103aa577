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
}

extension EventLoop {
    /// Runs the loop until `done` or `timeout` seconds passed.
    func run(timeout: Double, until done: @escaping () -> Bool) {
        func check() {
            if done() { stop() } else { _ = schedule(after: 0.01) { check() } }
        }
        _ = schedule(after: 0) { check() }
        _ = schedule(after: timeout) { [unowned self] in stop() }
        run()
    }
}
