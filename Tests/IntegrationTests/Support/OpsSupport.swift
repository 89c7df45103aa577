import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// A stand-in for systemd's notification socket: an AF_UNIX datagram socket the test binds
/// (a path, or `@name` in the abstract namespace) and reads `sd_notify` messages from.
final class NotifyListener {
    let fd: Int32
    /// The value for `NOTIFY_SOCKET`.
    let name: String
    private let path: String?

    init(abstract: Bool = false) throws {
        let unique = UUID().uuidString.prefix(8)
        name = abstract ? "@fleet-token-proxy-test-\(unique)" : NSTemporaryDirectory() + "ftp-notify-\(unique).sock"
        path = abstract ? nil : name
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SidecarError("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(name.utf8)
        if abstract { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (abstract ? 0 : 1))
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard rc == 0 else { throw SidecarError("bind \(name): \(String(cString: strerror(errno)))") }
    }

    deinit {
        close(fd)
        if let path { unlink(path) }
    }

    /// The next datagram, or nil if none arrives within `timeout` seconds.
    func next(timeout: Double) -> String? {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, Int32(timeout * 1000)) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = recv(fd, &buffer, buffer.count, 0)
        return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : nil
    }

    /// Datagrams until one has the line `line`; nil if it does not come within `timeout`.
    func waitFor(line: String, timeout: Double) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            guard let message = next(timeout: deadline.timeIntervalSinceNow) else { return nil }
            if message.split(separator: "\n").contains(Substring(line)) { return message }
        }
        return nil
    }
}

/// Any command (a socket-activation wrapper around the sidecar, the sidecar with a special
/// stderr) run as a child, its stdout and stderr captured.
///
/// Spawned with `posix_spawn`, not Foundation's `Process`: `Process` learns of an exit from a
/// socket the child inherits, and `systemd-socket-activate` closes every fd but the ones it
/// passes, which `Process` takes for an exit and then blocks reaping a live child.
///
/// `@unchecked Sendable`: the log is appended by the reader thread and read from the test
/// thread, always under `lock`; `pid` and `status` are touched by the test thread only.
final class ServiceProcess: @unchecked Sendable {
    private(set) var pid: pid_t = 0
    private var status: Int32?
    private var readFD: Int32 = -1
    private var writeFD: Int32 = -1
    private let lock = NSLock()
    private var data = Data()

    init() throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw SidecarError("pipe: \(String(cString: strerror(errno)))") }
        readFD = fds[0]
        writeFD = fds[1]
        _ = fcntl(readFD, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writeFD, F_SETFD, FD_CLOEXEC)
    }

    /// `device:inode` of the pipe the child's stderr is, in `JOURNAL_STREAM` form.
    var stderrIdentity: String {
        var st = stat()
        fstat(writeFD, &st)
        return "\(st.st_dev):\(st.st_ino)"
    }

    /// Starts `executable`; `environment` is the child's whole environment.
    func start(_ executable: String, _ arguments: [String], environment: [String: String]) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, writeFD, 1)
        posix_spawn_file_actions_adddup2(&actions, writeFD, 2)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        let rc = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard rc == 0 else { throw SidecarError("spawn \(executable): \(String(cString: strerror(rc)))") }
        close(writeFD)
        let fd = readFD
        Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = read(fd, &buffer, buffer.count)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { break }
                lock.lock()
                data.append(contentsOf: buffer[0..<n])
                lock.unlock()
            }
            close(fd)
        }.start()
    }

    var log: String {
        lock.lock()
        defer { lock.unlock() }
        return String(decoding: data, as: UTF8.self)
    }

    /// The first capture group of `pattern` in the log, waiting up to `timeout` seconds.
    func waitForLog(_ pattern: String, timeout: Double = 10) -> String? {
        let regex = try! NSRegularExpression(pattern: pattern)
        let deadline = Date().addingTimeInterval(timeout)
        repeat {
            let text = log
            if let match = regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) {
                let range = match.numberOfRanges > 1 ? match.range(at: 1) : match.range
                return String(text[Range(range, in: text)!])
            }
            usleep(20_000)
        } while Date() < deadline
        return nil
    }

    func signal(_ signal: Int32) {
        if pid > 0 && status == nil { kill(pid, signal) }
    }

    /// The exit status; nil if still running after `timeout` seconds (then it is killed).
    func waitForExit(timeout: Double = 15) -> Int32? {
        guard pid > 0 else { return nil }
        if let status { return status }
        let deadline = Date().addingTimeInterval(timeout)
        var raw: Int32 = 0
        while Date() < deadline {
            if waitpid(pid, &raw, WNOHANG) == pid {
                // WIFEXITED / WEXITSTATUS, spelled out: the macros are not imported.
                status = (raw & 0x7F) == 0 ? (raw >> 8) & 0xFF : 128 + (raw & 0x7F)
                usleep(50_000)
                return status
            }
            usleep(20_000)
        }
        kill(pid, SIGKILL)
        waitpid(pid, &raw, 0)
        status = -1
        return nil
    }

    deinit {
        if pid > 0 && status == nil {
            kill(pid, SIGKILL)
            var raw: Int32 = 0
            waitpid(pid, &raw, 0)
        }
    }
}

extension SidecarProcess {
    /// The admin listener's address from the `listening` line (`admin=…`).
    var adminAddress: String? {
        guard let range = log.range(of: #"admin=(\S+)"#, options: .regularExpression) else { return nil }
        return String(log[range].dropFirst("admin=".count))
    }

    func signal(_ signal: Int32) { kill(process.processIdentifier, signal) }

    /// Waits for the exit; nil if still running after `timeout` seconds.
    func waitForExit(timeout: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        guard !process.isRunning else { return nil }
        process.waitUntilExit()
        usleep(50_000)
        return process.terminationStatus
    }

    /// Waits until `text` is in the log.
    func waitForLog(_ text: String, timeout: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        repeat {
            if log.contains(text) { return true }
            usleep(20_000)
        } while Date() < deadline
        return false
    }

    /// Descriptors the sidecar holds open now (`/proc/<pid>/fd`); -1 when it cannot be read.
    var descriptorCount: Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.processIdentifier)/fd").count) ?? -1
    }
}

/// True once `condition` holds, checked every 10 ms for at most `seconds`.
func eventually(within seconds: Double, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        if Date() > deadline { return false }
        usleep(10_000)
    }
    return true
}

/// GET with curl: the HTTP status (0 if none) and body. `unixSocket` goes through a socket file.
func httpGet(_ url: String, unixSocket: String? = nil, maxTime: Double = 20) throws -> (status: Int, body: String, curlExit: Int32) {
    var args = ["-s", "--max-time", "\(maxTime)", "-w", "\n%{http_code}"]
    if let unixSocket { args += ["--unix-socket", unixSocket] }
    let result = try runCommand("/usr/bin/curl", args + [url])
    var lines = result.stdout.components(separatedBy: "\n")
    let status = Int(lines.popLast() ?? "") ?? 0
    return (status, lines.joined(separator: "\n"), result.status)
}

/// One scrape of a Prometheus text page, for reading values by name and labels.
struct MetricsPage {
    let text: String

    /// The value of the sample `name{labels}`: every given label must match; with no labels
    /// given, the sum over all label sets.
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        var total: Double?
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " ") else { continue }
            let series = line[..<space]
            let sampleName = series.split(separator: "{", maxSplits: 1).first.map(String.init) ?? ""
            guard sampleName == name, let value = Double(line[line.index(after: space)...]) else { continue }
            let have = Self.labels(of: series)
            guard labels.allSatisfy({ have[$0.key] == $0.value }) else { continue }
            total = (total ?? 0) + value
        }
        return total
    }

    static func labels(of series: Substring) -> [String: String] {
        guard let open = series.firstIndex(of: "{"), series.last == "}" else { return [:] }
        var result: [String: String] = [:]
        let body = series[series.index(after: open)..<series.index(before: series.endIndex)]
        for pair in body.split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { continue }
            result[String(parts[0])] = String(parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
        }
        return result
    }
}

/// A client that keeps one TCP connection open across requests (curl cannot pause between
/// two requests on one connection).
final class KeepAliveClient {
    private let fd: Int32

    init(address: String) throws {
        fd = try connectTCP(to: address)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// Sends `GET path` and reads one response with a Content-Length body; the status, or nil
    /// if the connection closed first.
    func get(_ path: String) -> Int? {
        let request = Array("GET \(path) HTTP/1.1\r\nHost: sidecar\r\n\r\n".utf8)
        guard send(fd, request, request.count, Int32(MSG_NOSIGNAL)) == request.count else { return nil }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            if let end = Self.headEnd(received) {
                let head = String(decoding: received[..<end], as: UTF8.self)
                let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                if received.count >= end + 4 + length {
                    return head.split(separator: " ").dropFirst().first.flatMap { Int($0) }
                }
            }
            let n = recv(fd, &buffer, buffer.count, 0)
            guard n > 0 else { return nil }
            received += buffer[0..<n]
        }
    }

    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i
        }
        return nil
    }
}

/// A blocking TCP socket connected to `address` (`a.b.c.d:port`, IPv4 loopback in tests).
/// `receiveBuffer`: SO_RCVBUF set before the connect (so the window the client offers stays
/// small), for a client that must make the sidecar queue what it does not read.
func connectTCP(to address: String, receiveBuffer: Int32? = nil) throws -> Int32 {
    let parts = address.split(separator: ":")
    guard parts.count == 2, let port = UInt16(parts[1]) else { throw SidecarError("bad address \(address)") }
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    if var size = receiveBuffer {
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }
    var sin = sockaddr_in()
    sin.sin_family = sa_family_t(AF_INET)
    sin.sin_port = port.bigEndian
    inet_pton(AF_INET, String(parts[0]), &sin.sin_addr)
    let rc = withUnsafePointer(to: &sin) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard rc == 0 else {
        let why = String(cString: strerror(errno))
        close(fd)
        throw SidecarError("connect \(address): \(why)")
    }
    return fd
}
