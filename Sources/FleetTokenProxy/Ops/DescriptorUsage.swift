#if canImport(Glibc)
import Glibc
#endif

/// How many descriptors the process has open, and its limit (`RLIMIT_NOFILE`), for the line
/// that says it ran out (docs/CONTRACT.md §5). Read only when that line is written, never per
/// call.
///
/// Counting lists `/proc/self/fd`, which takes a descriptor itself — exactly what is missing
/// when the line is due. So one descriptor (`/dev/null`) is held in reserve from the start and
/// given up for the count when opening the directory fails, then taken back. Loop-thread only.
final class DescriptorUsage {
    /// The descriptor held for counting, or -1 when it could not be (re)opened.
    private var reserve: Int32 = -1

    init() { takeReserve() }

    deinit { if reserve >= 0 { Glibc.close(reserve) } }

    /// Descriptors open now (the reserve included), nil when they cannot be counted.
    func open() -> Int? {
        if let n = Self.countOpen() { return n }
        guard errno == EMFILE || errno == ENFILE, reserve >= 0 else { return nil }
        Glibc.close(reserve)
        reserve = -1
        let counted = Self.countOpen()
        takeReserve()
        // Counted while the reserve was given up: it is one of the process's descriptors.
        return counted.map { $0 + 1 }
    }

    /// The soft limit on open descriptors; nil when unlimited (`RLIM_INFINITY`, all ones) or unknown.
    static func limit() -> UInt64? {
        var rl = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &rl) == 0, rl.rlim_cur != rlim_t.max else { return nil }
        return UInt64(rl.rlim_cur)
    }

    private func takeReserve() {
        if reserve < 0 { reserve = Glibc.open("/dev/null", O_RDONLY | O_CLOEXEC) }
    }

    /// Entries of `/proc/self/fd` but the directory's own; nil (errno set) when it cannot be read.
    private static func countOpen() -> Int? {
        guard let dir = opendir("/proc/self/fd") else { return nil }
        defer { closedir(dir) }
        var count = 0
        while let entry = readdir(dir) {
            let isDot = withUnsafeBytes(of: entry.pointee.d_name) { $0.first == UInt8(ascii: ".") }
            if !isDot { count += 1 }
        }
        return max(0, count - 1)
    }
}
