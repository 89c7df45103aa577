#if canImport(Glibc)
import Glibc
#endif

/// Whether a Google metadata server answers at a numeric address (docs/CONTRACT.md §4a): asked
/// once at start, only when ADC is needed, no ADC file exists and nothing else says this is a
/// Google Cloud host — the last place looked before the start-up error, as Google's libraries
/// probe it. `GET /computeMetadata/v1/` with `Metadata-Flavor: Google`, and the answer must say
/// `Metadata-Flavor: Google` too: another cloud's metadata service at the same link-local
/// address does not. Blocking, bounded by `timeout` in all.
enum MetadataServerProbe {
    /// Where Google's metadata server is on every Compute Engine network.
    static let address = "169.254.169.254"
    /// The most of an answer's head read.
    static let maximumHead = 4096

    static func answers(host: String = address, port: UInt16 = 80, within timeout: Double = 1) -> Bool {
        guard let target = SocketAddress(numericHost: host, port: port) else { return false }
        let deadline = now() + timeout
        let fd = socket(target.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let started = target.withSockaddr { connect(fd, $0, $1) }
        guard started == 0 || errno == EINPROGRESS, wait(fd, for: Int16(POLLOUT), until: deadline) else { return false }
        var failure: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &length) == 0, failure == 0 else { return false }

        let request = Array("GET /computeMetadata/v1/ HTTP/1.1\r\nHost: \(host)\r\nMetadata-Flavor: Google\r\nConnection: close\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else { return false }

        var head: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1024)
        while head.count < maximumHead, headEnd(head) == nil, wait(fd, for: Int16(POLLIN), until: deadline) {
            let got = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if got < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            guard got > 0 else { break }
            head += chunk[..<got]
        }
        return says(head)
    }

    /// Whether an answer's head (status line and fields, as read) is a 200 from Google's server.
    static func says(_ head: [UInt8]) -> Bool {
        guard let end = headEnd(head) else { return false }
        let lower = head[..<end].map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }
        let lines = lower.split(separator: 10).map { line in line.last == 13 ? Array(line.dropLast()) : Array(line) }
        guard let status = lines.first, status.starts(with: Array("http/1.1 200".utf8)) else { return false }
        let name = Array("metadata-flavor:".utf8)
        return lines.dropFirst().contains { line in
            line.starts(with: name) && Array(line.dropFirst(name.count).drop { $0 == 32 || $0 == 9 }) == Array("google".utf8)
        }
    }

    /// The index of the CRLF CRLF that ends a head, if the bytes hold one.
    static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        return (0...(bytes.count - 4)).first { bytes[$0] == 13 && bytes[$0 + 1] == 10 && bytes[$0 + 2] == 13 && bytes[$0 + 3] == 10 }
    }

    /// Polls `fd` for `events` until `deadline` (monotonic seconds); false on timeout or error.
    private static func wait(_ fd: Int32, for events: Int16, until deadline: Double) -> Bool {
        while true {
            let left = deadline - now()
            guard left > 0 else { return false }
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&entry, 1, Int32((left * 1000).rounded(.up)))
            if ready < 0 && errno == EINTR { continue }
            return ready == 1 && entry.revents & events != 0
        }
    }

    private static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
