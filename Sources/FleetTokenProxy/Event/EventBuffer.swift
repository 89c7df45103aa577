import CEvent

/// An evbuffer with one owner: made when the value is, freed when it ends. Non-copyable, so
/// the buffer is freed exactly once and no second owner can outlive it; the rest of the code
/// adds, removes and looks at bytes through these methods and never holds its pointer.
///
/// Invariant: `pointer` is a live evbuffer from `init` to `deinit`, referenced by no other
/// owner; a view `withPulledUp` hands out is valid only inside its closure, which must not
/// change the buffer. Bytes keep their order: additions go to the back (`prepend` alone puts
/// bytes in front), removals, drains and copies take from the front, and every count asked
/// for is cut to what is held, so no method reads or frees past the bytes there are.
///
/// A `let` property of a class: the methods borrow it (none is `mutating`), so reaching it
/// costs no exclusivity check.
struct EventBuffer: ~Copyable {
    /// For libevent calls that move chains between buffers (`Transport.moveIn`).
    let pointer: OpaquePointer

    init() {
        guard let buffer = evbuffer_new() else { fatalError("evbuffer_new failed: out of memory") }
        pointer = buffer
    }

    deinit { evbuffer_free(pointer) }

    /// Bytes held.
    var count: Int { evbuffer_get_length(pointer) }
    var isEmpty: Bool { count == 0 }

    /// Appends a copy of `bytes`.
    func add(_ bytes: ByteView) {
        guard bytes.count > 0 else { return }
        evbuffer_add(pointer, bytes.base, bytes.count)
    }

    /// Appends a copy of `bytes` (a DATA frame's payload, a body read into a buffer).
    func add(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        evbuffer_add(pointer, bytes.baseAddress, bytes.count)
    }

    /// Moves up to `buffer.count` bytes from the front into `buffer`; returns how many.
    func remove(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard buffer.count > 0 else { return 0 }
        return max(Int(evbuffer_remove(pointer, buffer.baseAddress, buffer.count)), 0)
    }

    /// Copies up to `buffer.count` bytes from the front into `buffer`, keeping them; returns how many.
    func copyOut(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard buffer.count > 0 else { return 0 }
        return max(Int(evbuffer_copyout(pointer, buffer.baseAddress, buffer.count)), 0)
    }

    /// Discards up to `count` bytes from the front.
    func drain(_ count: Int) {
        guard count > 0 else { return }
        evbuffer_drain(pointer, count)
    }

    /// Discards every byte; returns how many there were.
    @discardableResult
    func drainAll() -> Int {
        let held = count
        drain(held)
        return held
    }

    /// Moves every byte of `other` in front of this buffer's (chains move; nothing is copied).
    func prepend(_ other: borrowing EventBuffer) {
        evbuffer_prepend_buffer(pointer, other.pointer)
    }

    /// Calls `body` with each contiguous piece of the first `limit` bytes (all when negative),
    /// in order, until it returns false; nothing is consumed. The pieces are valid only inside
    /// `body`, which must not change the buffer.
    func forEachPiece(limit: Int = -1, _ body: (ByteView) -> Bool) {
        forEachChain(of: pointer, limit: limit) { piece in
            body(ByteView(piece))
        }
    }

    /// Calls `body` with the first `count` bytes (fewer when fewer are held) made contiguous,
    /// still in the buffer: an empty view when it is empty or the bytes could not be joined
    /// (out of memory).
    @inline(__always)
    func withPulledUp<R>(_ count: Int, _ body: (ByteView) -> R) -> R {
        EventBuffer.withPulledUp(pointer, count, body)
    }

    /// `withPulledUp` over a buffer someone else owns (a bufferevent's input: `Transport`).
    @inline(__always)
    static func withPulledUp<R>(_ buffer: OpaquePointer, _ count: Int, _ body: (ByteView) -> R) -> R {
        let n = min(count, evbuffer_get_length(buffer))
        guard n > 0, let base = evbuffer_pullup(buffer, n) else { return body(ByteView(start: nil, count: 0)) }
        return body(ByteView(start: base, count: n))
    }
}
