import CEvent
#if canImport(Glibc)
import Glibc
#endif

/// The service manager's notification protocol (`sd_notify(3)`) spoken directly, without
/// libsystemd: each state change is one datagram of `KEY=value` lines sent to the AF_UNIX
/// socket named by `NOTIFY_SOCKET` (a path, or `@name` for the abstract namespace).
///
/// Loop-thread only, like everything the sidecar owns.
package final class SystemdNotifier {
    /// One line of a notification.
    package enum State: Equatable, Sendable {
        /// Start-up is done: listeners are bound (`READY=1`).
        case ready
        /// Shutdown has begun: draining (`STOPPING=1`).
        case stopping
        /// Configuration is being reloaded (`RELOADING=1`).
        case reloading
        /// The loop is alive (`WATCHDOG=1`).
        case watchdog
        /// Free text shown by `systemctl status` (`STATUS=…`).
        case status(String)

        var line: String {
            switch self {
            case .ready: return "READY=1"
            case .stopping: return "STOPPING=1"
            case .reloading: return "RELOADING=1"
            case .watchdog: return "WATCHDOG=1"
            // A newline would start a new assignment; the status is one line by contract.
            case .status(let text): return "STATUS=" + text.map { $0.isNewline ? " " : String($0) }.joined()
            }
        }
    }

    private let fd: Int32
    private var address: sockaddr_un
    private let addressLength: socklen_t
    /// Where the notifications go, as `NOTIFY_SOCKET` said.
    package let socketName: String

    /// Opens a datagram socket towards `NOTIFY_SOCKET`; nil when the variable is unset or empty
    /// (not started by systemd with `Type=notify`), or names no usable socket.
    package init?(environment: [String: String]) {
        guard let name = environment["NOTIFY_SOCKET"], let (address, length) = Self.socketAddress(name) else { return nil }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        self.fd = fd
        self.address = address
        self.addressLength = length
        self.socketName = name
    }

    deinit { Glibc.close(fd) }

    /// Sends one datagram with `states`, one a line; false if the manager could not be reached.
    @discardableResult
    package func notify(_ states: State...) -> Bool {
        notify(states)
    }

    @discardableResult
    package func notify(_ states: [State]) -> Bool {
        let message = Array(Self.message(states).utf8)
        let sent = message.withUnsafeBytes { bytes in
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                    sendto(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL), sa, addressLength)
                }
            }
        }
        return sent == message.count
    }

    /// Sends `WATCHDOG=1` every `interval` seconds from a timer on `loop`: a loop that is stuck
    /// stops petting, and systemd restarts the service.
    package func startWatchdog(on loop: EventLoop, every interval: Double) {
        loop.schedule(after: interval) { [weak self, weak loop] in
            guard let self, let loop else { return }
            self.notify(.watchdog)
            self.startWatchdog(on: loop, every: interval)
        }
    }

    /// The datagram's text: one `KEY=value` assignment a line.
    static func message(_ states: [State]) -> String {
        states.map(\.line).joined(separator: "\n")
    }

    /// The address `NOTIFY_SOCKET` names: an absolute path, or `@name` for the Linux abstract
    /// namespace (leading NUL, no terminator, length exact). Nil for anything else.
    static func socketAddress(_ name: String) -> (sockaddr_un, socklen_t)? {
        var bytes = Array(name.utf8)
        guard bytes.count >= 2, bytes[0] == UInt8(ascii: "/") || bytes[0] == UInt8(ascii: "@"), !bytes.contains(0) else {
            return nil
        }
        let abstract = bytes[0] == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        // A path needs room for its NUL terminator; an abstract name may fill sun_path.
        guard bytes.count <= (abstract ? capacity : capacity - 1) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let pathOffset = MemoryLayout<sa_family_t>.size
        let length = pathOffset + bytes.count + (abstract ? 0 : 1)
        return (address, socklen_t(length))
    }

    /// Half of `WATCHDOG_USEC`, in seconds: how often to send `WATCHDOG=1`. Nil when no watchdog
    /// is asked for, or it is meant for another process (`WATCHDOG_PID`).
    package static func watchdogInterval(environment: [String: String], pid: Int32) -> Double? {
        guard let text = environment["WATCHDOG_USEC"], let usec = UInt64(text), usec > 0 else { return nil }
        if let pidText = environment["WATCHDOG_PID"], Int32(pidText) != pid { return nil }
        return Double(usec) / 1_000_000 / 2
    }
}
