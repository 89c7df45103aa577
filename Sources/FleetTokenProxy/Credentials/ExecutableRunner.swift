#if canImport(Glibc)
import Glibc
#endif

/// Runs a pluggable-auth program (docs/CONTRACT.md §4a) the way Google's libraries do, but
/// never through a shell: `posix_spawnp` with the words of its command as `argv`, the given
/// environment, standard input from `/dev/null`, standard output and error into one pipe. At
/// most `maximumOutput` bytes of output are kept; past `timeout` the program is killed, and
/// whatever it started with it (it runs in a process group of its own).
/// Blocking: run it on a worker thread, never on the loop.
enum ExecutableRunner {
    enum Outcome: Sendable, Equatable {
        case exited(status: Int32, output: [UInt8])
        /// Ended by a signal (never 0).
        case killed(signal: Int32)
        case timedOut
        /// `posix_spawnp`'s error (`errno`), e.g. ENOENT for a program that does not exist.
        case couldNotStart(Int32)
    }

    static func run(_ arguments: [String], environment: [String: String], timeout: Double, maximumOutput: Int = 64 * 1024) -> Outcome {
        let deadline = now() + timeout
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return .couldNotStart(errno) }
        // Neither end leaks into the program (dup2 gives it its own) or another spawned process.
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 2)
        // The program gets nothing else of the sidecar's: no listener, no upstream connection.
        closeFrom(3, in: &actions)

        // C strings owned here until the spawn returns: freed in one place below.
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // As Python's subprocess restores them: no signal blocked (a worker thread's mask is not
        // the program's business) and SIGPIPE, which the sidecar ignores, at its default.
        var none = sigset_t()
        sigemptyset(&none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGHUP, SIGINT, SIGTERM] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        posix_spawnattr_setpgroup(&attributes, 0)
        var pid: pid_t = 0
        let spawned = posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, envp)
        close(fds[1])
        defer { close(fds[0]) }
        guard spawned == 0 else { return .couldNotStart(spawned) }

        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        var open = true
        while open {
            let left = deadline - now()
            guard left > 0 else { return kill(pid) }
            var entry = pollfd(fd: fds[0], events: Int16(POLLIN), revents: 0)
            let ready = poll(&entry, 1, Int32((left * 1000).rounded(.up)))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { continue }
            let got = chunk.withUnsafeMutableBytes { read(fds[0], $0.baseAddress, $0.count) }
            if got < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            if got <= 0 {
                open = false
            } else if output.count < maximumOutput {
                output += chunk[..<min(got, maximumOutput - output.count)]
            }
        }
        // Output closed: the program has ended, or is about to; it still has until the deadline.
        while true {
            var status: Int32 = 0
            let ended = waitpid(pid, &status, WNOHANG)
            if ended == pid {
                let signal = status & 0x7F
                return signal == 0 ? .exited(status: (status >> 8) & 0xFF, output: output) : .killed(signal: signal)
            }
            if ended < 0 && errno != EINTR { return .killed(signal: 0) }
            guard now() < deadline else { return kill(pid) }
            usleep(5_000)
        }
    }

    /// `posix_spawn_file_actions_addclosefrom_np` (glibc 2.34), looked up at run time because
    /// Swift's Glibc module is not built with `_GNU_SOURCE`; on an older libc, a close for each
    /// descriptor open now.
    private static func closeFrom(_ lowest: Int32, in actions: inout posix_spawn_file_actions_t) {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "posix_spawn_file_actions_addclosefrom_np") {
            _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, lowest)
            return
        }
        guard let directory = opendir("/proc/self/fd") else { return }
        defer { closedir(directory) }
        let own = dirfd(directory)
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if let fd = Int32(name), fd >= lowest, fd != own { posix_spawn_file_actions_addclose(&actions, fd) }
        }
    }

    /// Kills a program past its deadline, with its process group, and reaps it.
    private static func kill(_ pid: pid_t) -> Outcome {
        _ = Glibc.kill(-pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return .timedOut
    }

    private static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
