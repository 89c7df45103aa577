import CEvent
#if canImport(Glibc)
import Glibc
#endif

/// Calls `body` with each contiguous piece of an evbuffer, in order, up to `limit` bytes
/// (all when negative), until it returns false. Nothing is copied or pulled up.
func forEachChain(of buffer: OpaquePointer, limit: Int = -1, _ body: (UnsafeRawBufferPointer) -> Bool) {
    let count = Int(evbuffer_peek(buffer, limit, nil, nil, 0))
    guard count > 0 else { return }
    // A buffer read from a socket is one to a few chains: the vectors go on the stack (no
    // allocation per call, which this runs on every read); a longer buffer takes a heap array.
    // libevent's evbuffer_iovec is a macro for the system's iovec.
    if count <= inlineChains {
        withUnsafeTemporaryAllocation(of: iovec.self, capacity: inlineChains) { vectors in
            visitChains(of: buffer, limit: limit, vectors: vectors.baseAddress!, count: count, body)
        }
    } else {
        var vectors = [iovec](repeating: iovec(), count: count)
        vectors.withUnsafeMutableBufferPointer { vectors in
            visitChains(of: buffer, limit: limit, vectors: vectors.baseAddress!, count: count, body)
        }
    }
}

/// How many chains `forEachChain` takes on the stack.
private let inlineChains = 8

private func visitChains(of buffer: OpaquePointer, limit: Int, vectors: UnsafeMutablePointer<iovec>, count: Int,
                         _ body: (UnsafeRawBufferPointer) -> Bool) {
    // evbuffer_peek fills at most `count` vectors (it only writes, so uninitialized memory is fine).
    let filled = Int(evbuffer_peek(buffer, limit, nil, vectors, Int32(count)))
    var left = limit < 0 ? Int.max : limit
    for i in 0..<min(filled, count) where left > 0 {
        let v = vectors[i]
        let n = min(v.iov_len, left)
        left -= n
        if !body(UnsafeRawBufferPointer(start: v.iov_base, count: n)) { return }
    }
}
