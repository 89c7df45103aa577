#if canImport(Glibc)
import Glibc
#endif

/// Why `accept()` failed on a listener, from its `errno`, in the few kinds an operator acts on
/// differently (the `reason` label of `fleet_token_proxy_accept_errors_total`, a bounded set).
/// libevent retries EINTR, EAGAIN and ECONNABORTED itself; anything reaching here would fail
/// again at once, so the listener pauses (`AcceptPause`).
struct AcceptError: Equatable {
    enum Reason: String, CaseIterable {
        /// The process is at its descriptor limit (`ulimit -n`, `LimitNOFILE=`).
        case emfile
        /// The system's file table is full.
        case enfile
        /// The kernel is out of socket buffers.
        case enobufs
        /// The kernel is out of memory.
        case enomem
        /// Anything else (a firewall's EPERM, a protocol error).
        case other
    }

    let code: Int32

    init(errno code: Int32) { self.code = code }

    var reason: Reason {
        switch code {
        case EMFILE: return .emfile
        case ENFILE: return .enfile
        case ENOBUFS: return .enobufs
        case ENOMEM: return .enomem
        default: return .other
        }
    }

    /// What happened, in words for the log line.
    var summary: String {
        switch reason {
        case .emfile: return "the process is out of file descriptors"
        case .enfile: return "the system is out of file descriptors"
        case .enobufs, .enomem: return "the system is out of memory for sockets"
        case .other: return "accept failed"
        }
    }

    /// The C library's text for the code.
    var message: String { String(cString: strerror(code)) }
}
