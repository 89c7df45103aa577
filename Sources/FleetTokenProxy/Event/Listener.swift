import CEvent
#if canImport(Glibc)
import Glibc
#endif

/// A listening socket (TCP or Unix) whose accepted connections go to one Swift closure.
final class Listener {
    private var listener: OpaquePointer?
    private let onAccept: (Int32) -> Void
    /// The address actually bound (with the real port when 0 was asked for).
    private(set) var boundDescription: String
    private var unixPath: String?

    /// Binds `address`. `socketMode` (octal permissions) applies to Unix sockets.
    init(loop: EventLoop, address: ListenAddress, socketMode: UInt32? = nil, backlog: Int32 = 1024,
         onAccept: @escaping (Int32) -> Void) throws(ListenerError) {
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
                Unmanaged<Listener>.fromOpaque(arg!).takeUnretainedValue().onAccept(fd)
            }, context, flags, backlog, sa, Int32(len))
        }
        guard let listener else {
            throw ListenerError("cannot listen on \(address): \(String(cString: strerror(errno)))")
        }
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
        self.onAccept = onAccept
        self.boundDescription = description
        _ = evutil_make_socket_nonblocking(fd)
        let context = Unmanaged.passUnretained(self).toOpaque()
        listener = evconnlistener_new(loop.base, { _, fd, _, _, arg in
            Unmanaged<Listener>.fromOpaque(arg!).takeUnretainedValue().onAccept(fd)
        }, context, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, fd)
        guard listener != nil else { throw ListenerError("cannot adopt listening socket \(fd)") }
    }

    deinit { close() }

    /// Stops accepting without closing (connection limit reached).
    func pause() { if let listener { evconnlistener_disable(listener) } }
    func resume() { if let listener { evconnlistener_enable(listener) } }

    /// Closes the socket (and removes a Unix socket file we created). Idempotent.
    func close() {
        guard let listener else { return }
        self.listener = nil
        evconnlistener_free(listener)
        if let unixPath { unlink(unixPath) }
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
