import FleetTokenProxy
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The demo's simulated clients: `connections` threads, each with one keep-alive HTTP/1.1
/// connection to the sidecar and plain blocking socket calls. Each answer's status (0 when
/// the call failed) is handed to `onAnswer` on the loop. It drives the sidecar from outside,
/// as an unmodified client would, sharing nothing with the sidecar's own upstream client.
///
/// Loop-bound: call `send`, `close` and read `inFlight` on the loop's thread.
final class DemoClient {
    private let queue = DemoCallQueue()
    private let onAnswer: (Int) -> Void
    private(set) var inFlight = 0

    init(loop: EventLoop, host: String, port: UInt16, connections: Int, onAnswer: @escaping (Int) -> Void) {
        self.onAnswer = onAnswer
        let answered = LoopBound(self)
        for _ in 0..<max(1, connections) {
            let worker = DemoConnection(host: host, port: port)
            DemoThread.start { [queue] in
                while let request = queue.next() {
                    let status = worker.exchange(request)
                    loop.execute { answered.value?.answered(status) }
                }
                worker.disconnect()
            }
        }
    }

    func send(_ call: DemoCall) {
        inFlight += 1
        var head = "\(call.method) \(call.target) HTTP/1.1\r\nHost: sidecar\r\nUser-Agent: fleet-token-proxy-demo\r\n"
        let body = Array((call.body ?? "").utf8)
        if call.body != nil { head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n" }
        head += "\r\n"
        queue.push(DemoRequest(method: call.method, bytes: Array(head.utf8) + body))
    }

    /// The threads end once the calls already queued are answered.
    func close() { queue.close() }

    private func answered(_ status: Int) {
        inFlight -= 1
        onAnswer(status)
    }
}

/// One call's bytes as sent, and its method (a HEAD answer has no body).
struct DemoRequest: Sendable {
    var method: String
    var bytes: [UInt8]
}

/// The calls waiting for a demo connection, shared by the loop (which pushes) and the demo's
/// threads (which pop).
///
/// `@unchecked Sendable`: every stored property is read and written under `condition`.
private final class DemoCallQueue: @unchecked Sendable {
    private let condition = ThreadCondition()
    private var requests: [DemoRequest] = []
    private var head = 0
    private var closed = false

    func push(_ request: DemoRequest) {
        condition.lock()
        defer { condition.unlock() }
        requests.append(request)
        condition.signal()
    }

    /// The next call, waiting for one; nil once closed and empty.
    func next() -> DemoRequest? {
        condition.lock()
        defer { condition.unlock() }
        while head == requests.count && !closed { condition.wait() }
        guard head < requests.count else { return nil }
        let request = requests[head]
        head += 1
        if head == requests.count {
            requests.removeAll(keepingCapacity: true)
            head = 0
        }
        return request
    }

    func close() {
        condition.lock()
        defer { condition.unlock() }
        closed = true
        condition.broadcast()
    }
}

/// A weak reference carried to the loop from another thread.
///
/// `@unchecked Sendable`: `value` is only read on the loop's thread, inside work given to
/// `EventLoop.execute`.
private final class LoopBound<Value: AnyObject>: @unchecked Sendable {
    weak var value: Value?
    init(_ value: Value) { self.value = value }
}

/// One demo thread's keep-alive connection to the sidecar, reopened after a failure or a
/// `Connection: close` answer.
///
/// `@unchecked Sendable`: used by the one thread that owns it, after being handed to it.
private final class DemoConnection: @unchecked Sendable {
    private let host: String
    private let port: UInt16
    private var fd: Int32 = -1
    /// Bytes read past the end of the last answer.
    private var input: [UInt8] = []

    init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Sends `request` and reads its answer: the status, or 0 if the call failed.
    func exchange(_ request: DemoRequest) -> Int {
        guard connected() else { return 0 }
        guard writeAll(request.bytes), let (status, keepAlive) = readAnswer(method: request.method) else {
            disconnect()
            return 0
        }
        if !keepAlive { disconnect() }
        return status
    }

    func disconnect() {
        if fd >= 0 { close(fd) }
        fd = -1
        input = []
    }

    private func connected() -> Bool {
        if fd >= 0 { return true }
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        inet_pton(AF_INET, host, &address.sin_addr)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            close(descriptor)
            return false
        }
        fd = descriptor
        return true
    }

    /// SIGPIPE is ignored by `main`: a sidecar that went away is an error return here.
    private func writeAll(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return false }
            sent += n
        }
        return true
    }

    /// Reads more input; false at end of stream or on an error.
    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return false }
        input.append(contentsOf: chunk[0..<n])
        return true
    }

    /// The answer's status and whether the connection may be used again; nil if it broke.
    private func readAnswer(method: String) -> (Int, Bool)? {
        while true {
            let parsed = input.withUnsafeBytes { HTTP1Parser.parseResponse($0, maxHeadBytes: 64 * 1024, maxHeaderCount: 200) }
            switch parsed {
            case .invalid:
                return nil
            case .incomplete:
                guard fill() else { return nil }
            case .complete(let head, let headLength):
                input.removeFirst(headLength)
                // An interim answer (100 Continue) is followed by the real one.
                if head.status < 200 { continue }
                guard skipBody(head.framing(requestMethod: method)) else { return nil }
                return (head.status, head.keepAlive)
            }
        }
    }

    private func skipBody(_ framing: BodyFraming) -> Bool {
        switch framing {
        case .none:
            return true
        case .contentLength(let length):
            while input.count < length { guard fill() else { return false } }
            input.removeFirst(length)
            return true
        case .chunked:
            var scanner = ChunkedBodyScanner()
            while true {
                let scanned = input.withUnsafeBytes { scanner.scan($0) }
                guard case .success(let progress) = scanned else { return false }
                input.removeFirst(progress.consumed)
                if progress.finished { return true }
                guard fill() else { return false }
            }
        case .untilClose:
            while fill() { input.removeAll(keepingCapacity: true) }
            return true
        }
    }
}
