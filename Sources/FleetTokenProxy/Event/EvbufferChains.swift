import CEvent
#if canImport(Glibc)
import Glibc
#endif

/// Calls `body` with each contiguous piece of an evbuffer, in order, up to `limit` bytes
/// (all when negative), until it returns false. Nothing is copied or pulled up.
func forEachChain(of buffer: OpaquePointer, limit: Int = -1, _ body: (UnsafeRawBufferPointer) -> Bool) {
    let count = evbuffer_peek(buffer, limit, nil, nil, 0)
    guard count > 0 else { return }
    // libevent's evbuffer_iovec is a macro for the system's iovec.
    var vectors = [iovec](repeating: iovec(), count: Int(count))
    let filled = evbuffer_peek(buffer, limit, nil, &vectors, count)
    var left = limit < 0 ? Int.max : limit
    for v in vectors.prefix(Int(filled)) where left > 0 {
        let n = min(v.iov_len, left)
        left -= n
        if !body(UnsafeRawBufferPointer(start: v.iov_base, count: n)) { return }
    }
}
