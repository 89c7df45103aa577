import CEvent
#if canImport(Glibc)
import Glibc
#endif

/// Calls `body` with each contiguous piece of an evbuffer, in order, up to `limit` bytes
/// (all when negative), until it returns false. Nothing is copied or pulled up.
func forEachChain(of buffer: OpaquePointer, limit: Int = -1, _ body: (UnsafeRawBufferPointer) -> Bool) {
    // A buffer read from a socket is one to a few chains: one evbuffer_peek fills vectors on
    // the stack (no allocation, and no first call only to count, on a path every read takes);
    // it returns how many the bytes need, so a longer buffer is peeked again into a heap array.
    // libevent's evbuffer_iovec is a macro for the system's iovec.
    let needed = withUnsafeTemporaryAllocation(of: iovec.self, capacity: inlineChains) { vectors in
        visitChains(of: buffer, limit: limit, vectors: vectors.baseAddress!, count: inlineChains, fitsOnly: true, body)
    }
    guard needed > inlineChains else { return }
    var vectors = [iovec](repeating: iovec(), count: needed)
    vectors.withUnsafeMutableBufferPointer { vectors in
        _ = visitChains(of: buffer, limit: limit, vectors: vectors.baseAddress!, count: needed, fitsOnly: false, body)
    }
}

/// How many chains `forEachChain` takes on the stack.
private let inlineChains = 8

private func visitChains(of buffer: OpaquePointer, limit: Int, vectors: UnsafeMutablePointer<iovec>, count: Int,
                         fitsOnly: Bool, _ body: (UnsafeRawBufferPointer) -> Bool) -> Int {
    // evbuffer_peek fills at most `count` vectors (it only writes, so uninitialized memory is
    // fine) and returns how many the bytes take.
    let needed = Int(evbuffer_peek(buffer, limit, nil, vectors, Int32(count)))
    // `fitsOnly`: a buffer that needs more vectors is visited from the start again, by the
    // caller, with enough of them (nothing of it is visited here).
    if fitsOnly && needed > count { return needed }
    var left = limit < 0 ? Int.max : limit
    for i in 0..<min(needed, count) where left > 0 {
        let v = vectors[i]
        let n = min(v.iov_len, left)
        left -= n
        if !body(UnsafeRawBufferPointer(start: v.iov_base, count: n)) { break }
    }
    return needed
}
