#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes to standard output and error with write(2), whole lines at a time: what
/// `FileHandle` did here, without loading Foundation for it.
enum StandardStreams {
    static func output(_ text: String) { send(text, to: STDOUT_FILENO) }
    static func error(_ text: String) { send(text, to: STDERR_FILENO) }

    private static func send(_ text: String, to descriptor: Int32) {
        var bytes = Array(text.utf8)
        bytes.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += written
            }
        }
    }
}
