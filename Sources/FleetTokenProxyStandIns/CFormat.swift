#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// printf-style formatting through vsnprintf, for the demo's aligned summary lines (what
/// `String(format:)` did, without loading Foundation for it). `%d` takes an `Int`.
func cFormat(_ format: String, _ arguments: CVarArg...) -> String {
    withVaList(arguments) { first in
        var buffer = [CChar](repeating: 0, count: 256)
        let needed = Int(vsnprintf(&buffer, buffer.count, format, first))
        if needed < buffer.count { return text(buffer, count: needed) }
        return withVaList(arguments) { again in
            buffer = [CChar](repeating: 0, count: needed + 1)
            _ = vsnprintf(&buffer, buffer.count, format, again)
            return text(buffer, count: needed)
        }
    }
}

private func text(_ buffer: [CChar], count: Int) -> String {
    String(decoding: buffer.prefix(max(0, count)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
