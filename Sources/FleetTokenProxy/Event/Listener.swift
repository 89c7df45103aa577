import CEvent
#if canImport(Glibc)
import Glibc
#endif

/// A listening socket (TCP or Unix) whose accepted connections go to one Swift closure.
///
/// When `accept()` fails for want of descriptors or memory the listener stops accepting for a
/// short, growing pause (`AcceptPause`, docs/CONTRACT.md §5): called again at once for the same
/// pending connection, it would fail again at once, spinning a core. Its owner may also hold it
/// off at the connection limit; it accepts only when neither holds.
final class Listener {
    private var listener: OpaquePointer?
    private let loop: EventLoop
    private let onAccept: (Int32) -> Void
    /// Told of each failed accept and the pause it starts (nil when a pause was under way), to
    /// log and count it; the pause happens whether or not anyone is told.
    var onAcceptError: ((AcceptError, _ pause: Double?) -> Void)?
    private var pause = AcceptPause()
    /// Ends a pause after a failed accept; armed only while one lasts.
    private var pauseTimer: ScheduledWork?
    /// The address actually bound (with the real port when 0 was asked for).
    private(set) var boundDescription: String
    private var unixPath: String?

    /// Binds `address`. `socketMode` (octal permissions) applies to Unix sockets.
    init(loop: EventLoop, address: ListenAddress, socketMode: UInt32? = nil, backlog: Int32 = 1024,
         onAccept: @escaping (Int32) -> Void) throws(ListenerError) {
        self.loop = loop
        self.onAccept = onAccept
        self.boundDescription = address.description
        let sockaddress: SocketAddress
        switch address {
        case .inet(let host, let port):
            guard let a = SocketAddress(numericHost: host, port: port) else {
                throw ListenerError("cannot listen on \(address): not a numeric address")
            }
            sockaddress = a
        case .unix(let path):
            guard let a = SocketAddress(unixPath: path) else {
                throw ListenerError("cannot listen on \(address): path too long")
            }
            Self.removeStaleSocket(path)
            sockaddress = a
            unixPath = path
        }
        let flags = LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC | LEV_OPT_REUSEABLE
        // Unretained context: the owner keeps the Listener alive until close(), which frees it.
        let context = Unmanaged.passUnretained(self).toOpaque()
        listener = sockaddress.withSockaddr { sa, len in
            evconnlistener_new_bind(loop.base, { _, fd, _, _, arg in
                Unmanaged<Listener>.fromOpaque(arg!).takeUnretainedValue().accepted(fd)
            }, context, flags, backlog, sa, Int32(len))
        }
        guard let listener else {
            throw ListenerError("cannot listen on \(address): \(String(cString: strerror(errno)))")
        }
        Self.setErrorCallback(listener)
        let fd = evconnlistener_get_fd(listener)
        if case .inet(let host, _) = address, let bound = SocketAddress(boundTo: fd) {
            boundDescription = ListenAddress.inet(host: host, port: bound.port).description
        }
        if let path = unixPath, let mode = socketMode, chmod(path, mode_t(mode)) != 0 {
            throw ListenerError("cannot set mode of \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Adopts an already-listening socket (systemd socket activation). Backlog 0 tells
    /// libevent not to call listen() again, which would shrink the unit's `Backlog=`.
    init(loop: EventLoop, adoptingFD fd: Int32, description: String, onAccept: @escaping (Int32) -> Void) throws(ListenerError) {
        self.loop = loop
        self.onAccept = onAccept
        self.boundDescription = description
        _ = evutil_make_socket_nonblocking(fd)
        let context = Unmanaged.passUnretained(self).toOpaque()
        listener = evconnlistener_new(loop.base, { _, fd, _, _, arg in
            Unmanaged<Listener>.fromOpaque(arg!).takeUnretainedValue().accepted(fd)
        }, context, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, fd)
        guard let listener else { throw ListenerError("cannot adopt listening socket \(fd)") }
        Self.setErrorCallback(listener)
    }

    deinit { close() }

    /// With an error callback set libevent no longer writes its own warning for a failed accept
    /// (docs/CONTRACT.md §5: nothing raw on stderr). The context is the accept callback's.
    private static func setErrorCallback(_ listener: OpaquePointer) {
        evconnlistener_set_error_cb(listener) { _, arg in
            // errno first, before anything else can change it.
            let code = errno
            Unmanaged<Listener>.fromOpaque(arg!).takeUnretainedValue().acceptFailed(errno: code)
        }
    }

    /// The connection limit is reached: stop accepting until `connectionLimitCleared`.
    func connectionLimitReached() { apply(pause.limitReached()) }
    /// Below the connection limit again; accepting resumes unless a pause after a failed
    /// accept still holds.
    func connectionLimitCleared() { apply(pause.limitCleared()) }

    /// A descriptor was freed (a client connection closed): a pause after a failed accept ends now.
    func descriptorFreed() {
        guard pause.pausingAfterFailure else { return }
        pauseTimer?.cancel()
        pauseTimer = nil
        apply(pause.descriptorFreed())
    }

    /// Closes the socket (and removes a Unix socket file we created). Idempotent.
    func close() {
        pauseTimer?.cancel()
        pauseTimer = nil
        guard let listener else { return }
        self.listener = nil
        evconnlistener_free(listener)
        if let unixPath { unlink(unixPath) }
    }

    private func accepted(_ fd: Int32) {
        pause.accepted()
        onAccept(fd)
    }

    private func acceptFailed(errno code: Int32) {
        let (effect, seconds) = pause.acceptFailed()
        apply(effect)
        if let seconds {
            // Unowned: `close()` (also from deinit) cancels the timer first.
            pauseTimer = loop.schedule(after: seconds) { [unowned self] in
                pauseTimer = nil
                apply(pause.pauseEnded())
            }
        }
        onAcceptError?(AcceptError(errno: code), seconds)
    }

    private func apply(_ effect: AcceptPause.Effect) {
        guard let listener else { return }
        switch effect {
        case .none: break
        case .stopAccepting: evconnlistener_disable(listener)
        case .startAccepting: evconnlistener_enable(listener)
        }
    }

    /// A socket file left by a previous run would make bind fail; remove it only if it is a socket.
    private static func removeStaleSocket(_ path: String) {
        var st = stat()
        if lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFSOCK { unlink(path) }
    }
}

/// A listening socket could not be set up.
struct ListenerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
