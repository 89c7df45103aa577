import CEvent
#if canImport(Glibc)
import Glibc
#endif

/// A socket address built from a `ListenAddress`-style host and port or a Unix path, kept as
/// raw bytes so it can be handed to libevent's C functions.
struct SocketAddress {
    private(set) var storage = sockaddr_storage()
    private(set) var length: socklen_t = 0

    /// A numeric IPv4 or IPv6 host; nil when `host` is not a numeric literal.
    init?(numericHost host: String, port: UInt16) {
        var v4 = sockaddr_in()
        if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            withUnsafeBytes(of: v4) { src in
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: src) }
            }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            return
        }
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET6, host, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = port.bigEndian
            withUnsafeBytes(of: v6) { src in
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: src) }
            }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            return
        }
        return nil
    }

    /// A Unix-domain socket path; nil when the path does not fit `sun_path`.
    init?(unixPath path: String) {
        var un = sockaddr_un()
        un.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: un.sun_path)
        guard bytes.count < capacity else { return nil }
        withUnsafeMutableBytes(of: &un.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        withUnsafeBytes(of: un) { src in
            withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: src) }
        }
        length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1)
    }

    /// The address a bound socket actually has (to learn an ephemeral port).
    init?(boundTo fd: Int32) {
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        guard rc == 0 else { return nil }
        length = len
    }

    var family: Int32 { Int32(storage.ss_family) }

    /// The port of an inet address, 0 otherwise.
    var port: UInt16 {
        withUnsafeBytes(of: storage) { raw in
            switch family {
            case AF_INET: return UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port)
            case AF_INET6: return UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port)
            default: return 0
            }
        }
    }

    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafeBytes(of: storage) { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), length)
        }
    }
}
