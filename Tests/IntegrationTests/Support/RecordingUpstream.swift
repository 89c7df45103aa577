import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A raw HTTP/1.1 upstream on a loopback port that keeps every byte it receives, per
/// connection, and frames requests itself (Content-Length or chunked, nothing cleverer), so a
/// test can read exactly what the sidecar forwarded: smuggled prefixes, duplicate framing,
/// trailers, headers that should never have left.
///
/// One thread accepts, one thread per connection reads. `@unchecked Sendable`: the recorded
/// state is only touched under `lock`.
final class RecordingUpstream: @unchecked Sendable {
    /// What to do with one framed request: answer with these bytes, or close without answering.
    enum Reply {
        case bytes([UInt8])
        case close
    }

    /// A request as this upstream framed it: the head text and the body bytes.
    struct Request {
        var connection: Int
        var head: String
        var body: [UInt8]
        var requestLine: String { String(head.split(separator: "\r\n", maxSplits: 1).first ?? "") }
        /// Every value of header `name` (case-insensitive), as sent.
        func values(_ name: String) -> [String] {
            head.split(separator: "\r\n").dropFirst().compactMap { line in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                guard line[..<colon].lowercased() == name.lowercased() else { return nil }
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
    }

    static let okJSON: [UInt8] = Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}".utf8)

    private let listenFD: Int32
    let address: String
    private let lock = NSLock()
    private var streams: [[UInt8]] = []
    private var parsed: [Request] = []
    private var fds: [Int32] = []
    private var stopped = false
    /// Decides the answer to the n-th request (0-based, over all connections) on a connection.
    private let reply: @Sendable (_ request: Request, _ index: Int) -> Reply

    init(reply: @escaping @Sendable (_ request: Request, _ index: Int) -> Reply = { _, _ in .bytes(RecordingUpstream.okJSON) }) throws {
        self.reply = reply
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        listenFD = fd
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_port = 0
        inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr)
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let rc = withUnsafeMutablePointer(to: &sin) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { ptr -> Int32 in
                guard bind(fd, ptr, len) == 0, listen(fd, 64) == 0 else { return -1 }
                return getsockname(fd, ptr, &len)
            }
        }
        guard rc == 0 else { throw SidecarError("recording upstream: cannot listen") }
        address = "127.0.0.1:\(UInt16(bigEndian: sin.sin_port))"
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    /// Every connection's received bytes, in accept order.
    var received: [[UInt8]] { lock.lock(); defer { lock.unlock() }; return streams }
    /// Every byte received on every connection, joined, as text (for "never contains" checks).
    var allText: String { String(decoding: received.joined(), as: UTF8.self) }
    /// The requests framed so far, in arrival order.
    var requests: [Request] { lock.lock(); defer { lock.unlock() }; return parsed }

    /// Waits until at least `count` requests arrived (or `timeout` passed); returns them.
    @discardableResult
    func waitForRequests(_ count: Int, timeout: Double = 5) -> [Request] {
        let deadline = Date().addingTimeInterval(timeout)
        while requests.count < count && Date() < deadline { usleep(10_000) }
        return requests
    }

    func stop() {
        lock.lock()
        stopped = true
        let open = fds
        lock.unlock()
        shutdown(listenFD, Int32(SHUT_RDWR))
        close(listenFD)
        for fd in open { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listenFD, nil, nil)
            guard fd >= 0 else { return }
            lock.lock()
            if stopped { lock.unlock(); close(fd); return }
            let index = streams.count
            streams.append([])
            fds.append(fd)
            lock.unlock()
            let thread = Thread { [self] in serve(fd, connection: index) }
            thread.start()
        }
    }

    private func serve(_ fd: Int32, connection: Int) {
        defer { close(fd) }
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            guard n > 0 else { return }
            lock.lock()
            streams[connection] += buffer[0..<n]
            lock.unlock()
            pending += buffer[0..<n]
            while let (request, length) = Self.frame(pending, connection: connection) {
                pending.removeFirst(length)
                lock.lock()
                let index = parsed.count
                parsed.append(request)
                lock.unlock()
                switch reply(request, index) {
                case .close:
                    return
                case .bytes(let bytes):
                    _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                }
            }
        }
    }

    /// One request from the start of `bytes`, with how many bytes it took; nil if incomplete.
    static func frame(_ bytes: [UInt8], connection: Int) -> (Request, Int)? {
        guard let headEnd = find([13, 10, 13, 10], in: bytes, from: 0) else { return nil }
        let head = String(decoding: bytes[..<headEnd], as: UTF8.self)
        var request = Request(connection: connection, head: head, body: [])
        let start = headEnd + 4
        if request.values("transfer-encoding").contains(where: { $0.lowercased().contains("chunked") }) {
            var i = start
            while true {
                guard let lineEnd = find([13, 10], in: bytes, from: i) else { return nil }
                let sizeText = String(decoding: bytes[i..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
                let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) ?? 0
                i = lineEnd + 2
                if size == 0 {
                    // Trailer lines up to the empty line.
                    guard let end = find([13, 10, 13, 10], in: bytes, from: i - 2) else { return nil }
                    return (request, end + 4)
                }
                guard bytes.count >= i + size + 2 else { return nil }
                request.body += bytes[i..<(i + size)]
                i += size + 2
            }
        }
        let length = request.values("content-length").first.flatMap { Int($0) } ?? 0
        guard bytes.count >= start + length else { return nil }
        request.body = Array(bytes[start..<(start + length)])
        return (request, start + length)
    }

    static func find(_ needle: [UInt8], in bytes: [UInt8], from: Int) -> Int? {
        guard bytes.count >= needle.count, from <= bytes.count - needle.count else { return nil }
        for i in from...(bytes.count - needle.count) where bytes[i] == needle[0] {
            if Array(bytes[i..<(i + needle.count)]) == needle { return i }
        }
        return nil
    }
}

/// A raw TCP client for adversarial requests: writes exactly the bytes given and reads back
/// framed responses, or notices the close.
final class RawClient {
    private let fd: Int32
    private var pending: [UInt8] = []
    private(set) var closedByPeer = false

    init(address: String, receiveBuffer: Int32? = nil) throws {
        fd = try connectTCP(to: address, receiveBuffer: receiveBuffer)
    }

    /// Each `send` leaves as its own segment (no Nagle coalescing), so a test controls where
    /// the sidecar's reads are cut.
    func sendEachWriteAtOnce() {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close(fd) }

    func send(_ text: String) { send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// A response as read back: status, head text, body.
    struct Response {
        var status: Int
        var head: String
        var body: String
    }

    /// Reads one response (Content-Length or chunked framed, or up to close); nil when the
    /// connection closed (or `timeout` passed) before a whole one arrived.
    func readResponse(timeout: Double = 5) -> Response? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let (response, length) = Self.frame(pending) {
                pending.removeFirst(length)
                return response
            }
            if closedByPeer { return nil }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return nil }
            guard readSome(within: left) else { return nil }
        }
    }

    /// True when the peer closes the connection within `timeout` (any bytes before are kept).
    func waitForClose(timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !closedByPeer {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return false }
            _ = readSome(within: left)
        }
        return true
    }

    /// Everything received and not yet returned as a response.
    var unread: String { String(decoding: pending, as: UTF8.self) }

    /// The same, as bytes (an HTTP/2 peer's frames).
    var unreadBytes: [UInt8] { pending }

    private func readSome(within seconds: Double) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&p, 1, Int32(max(1, seconds * 1000)))
        guard ready > 0 else { return false }
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        let n = recv(fd, &buffer, buffer.count, 0)
        if n <= 0 { closedByPeer = true; return true }
        pending += buffer[0..<n]
        return true
    }

    private static func frame(_ bytes: [UInt8]) -> (Response, Int)? {
        guard let headEnd = RecordingUpstream.find([13, 10, 13, 10], in: bytes, from: 0) else { return nil }
        let head = String(decoding: bytes[..<headEnd], as: UTF8.self)
        let status = head.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        if status >= 100 && status < 200 { return (Response(status: status, head: head, body: ""), headEnd + 4) }
        guard let (request, length) = RecordingUpstream.frame(bytes, connection: 0) else { return nil }
        return (Response(status: status, head: head, body: String(decoding: request.body, as: UTF8.self)), length)
    }
}
