#if canImport(Glibc)
import Glibc
#endif

/// A listening socket the service manager opened and passed to this process.
package struct ActivatedSocket: Equatable, Sendable {
    package let fd: Int32
    /// Its `FileDescriptorName=` from the socket unit (`LISTEN_FDNAMES`), or `unknown`.
    package let name: String

    package init(fd: Int32, name: String) {
        self.fd = fd
        self.name = name
    }
}

/// systemd socket activation (`sd_listen_fds(3)`): the sockets arrive as fds 3, 4, … with
/// `LISTEN_FDS` saying how many, `LISTEN_PID` which process they are for and `LISTEN_FDNAMES`
/// their names, colon-separated.
package enum SocketActivation {
    /// `SD_LISTEN_FDS_START`.
    static let firstFD: Int32 = 3
    static let variables = ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"]

    /// The sockets `environment` passes to process `pid`; empty when none are passed, or they
    /// are meant for another process (a parent's variables inherited by a child).
    static func sockets(environment: [String: String], pid: Int32) throws(ConfigError) -> [ActivatedSocket] {
        guard let pidText = environment["LISTEN_PID"], let countText = environment["LISTEN_FDS"] else { return [] }
        guard let listenPID = Int32(pidText), listenPID > 0 else {
            throw ConfigError("LISTEN_PID \(ConfigError.quoted(pidText)) is not a process id")
        }
        guard listenPID == pid else { return [] }
        // Far more than any socket unit passes; a bound keeps a bad value from looping long.
        guard let count = Int(countText), (0...4096).contains(count) else {
            throw ConfigError("LISTEN_FDS \(ConfigError.quoted(countText)) is not a number of sockets")
        }
        var names = Array(repeating: "unknown", count: count)
        if let namesText = environment["LISTEN_FDNAMES"], count > 0 {
            let given = namesText.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard given.count == count else {
                throw ConfigError("LISTEN_FDNAMES names \(given.count) sockets but LISTEN_FDS passes \(count)")
            }
            names = given
        }
        return (0..<count).map { ActivatedSocket(fd: firstFD + Int32($0), name: names[$0]) }
    }

    /// Reads the sockets passed to this process and unsets the variables, so nothing started
    /// later inherits them. Each socket is checked to be a listening stream socket and marked
    /// close-on-exec.
    package static func takeFromEnvironment(_ environment: [String: String]) throws(ConfigError) -> [ActivatedSocket] {
        defer { for name in variables { unsetenv(name) } }
        let sockets = try Self.sockets(environment: environment, pid: getpid())
        for socket in sockets {
            guard isListeningStreamSocket(socket.fd) else {
                throw ConfigError("fd \(socket.fd) (\(socket.name)) passed by socket activation is not a listening stream socket")
            }
            _ = fcntl(socket.fd, F_SETFD, fcntl(socket.fd, F_GETFD) | FD_CLOEXEC)
        }
        return sockets
    }

    static func isListeningStreamSocket(_ fd: Int32) -> Bool {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &value, &length) == 0, value == 1 else { return false }
        length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_TYPE, &value, &length) == 0 else { return false }
        return value == Int32(SOCK_STREAM.rawValue)
    }

    /// The local address of a socket in `--listen` syntax (`127.0.0.1:4180`, `[::1]:4180`,
    /// `unix:/path`, `unix:@abstract`), for logs.
    static func localAddress(of fd: Int32) -> String {
        boundAddress(of: fd)?.description ?? "fd:\(fd)"
    }

    /// The address a socket is bound to; an abstract unix socket's path starts with `@`. Nil
    /// for a family other than IPv4, IPv6 and unix, or when the kernel will not say.
    static func boundAddress(of fd: Int32) -> ListenAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard rc == 0 else { return nil }
        return withUnsafeBytes(of: storage) { raw -> ListenAddress? in
            switch Int32(storage.ss_family) {
            case AF_INET:
                let v4 = raw.load(as: sockaddr_in.self)
                return .inet(host: numericHost(AF_INET, withUnsafeBytes(of: v4.sin_addr) { Array($0) }), port: UInt16(bigEndian: v4.sin_port))
            case AF_INET6:
                let v6 = raw.load(as: sockaddr_in6.self)
                return .inet(host: numericHost(AF_INET6, withUnsafeBytes(of: v6.sin6_addr) { Array($0) }), port: UInt16(bigEndian: v6.sin6_port))
            case AF_UNIX:
                let offset = MemoryLayout<sa_family_t>.size
                let pathBytes = Array(raw[offset..<min(Int(length), raw.count)])
                if pathBytes.first == 0 {
                    return .unix(path: "@" + String(decoding: pathBytes.dropFirst(), as: UTF8.self))
                }
                return .unix(path: String(decoding: pathBytes.prefix { $0 != 0 }, as: UTF8.self))
            default:
                return nil
            }
        }
    }

    /// docs/CONTRACT.md §6 for sockets passed in as for `--listen`: each must be on loopback or a unix
    /// socket unless `allowNonLoopback`. A socket of another family is refused too: nothing
    /// says who can reach it.
    static func checkLoopback(_ sockets: [ActivatedSocket], allowNonLoopback: Bool) throws(ConfigError) {
        guard !allowNonLoopback else { return }
        for socket in sockets {
            guard let address = boundAddress(of: socket.fd) else {
                throw ConfigError("fd \(socket.fd) (\(socket.name)) passed by socket activation is not an IP or unix socket; add --allow-non-loopback to serve on it")
            }
            guard address.isLoopback else {
                throw ConfigError("fd \(socket.fd) (\(socket.name)) passed by socket activation is bound to \(address), not a loopback address or unix socket; add --allow-non-loopback to serve on it")
            }
        }
    }

    private static func numericHost(_ family: Int32, _ address: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        let ok = address.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count)) != nil }
        guard ok else { return "?" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
