import CEvent

/// The client connection preface of HTTP/2 (RFC 9113 §3.4), which is how an h2c client with
/// prior knowledge, such as a gRPC insecure channel, announces itself on the shared port.
enum HTTP2Preface {
    static let bytes = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    enum Match { case matches, needMore, differs }

    /// Compares the start of `input` with the preface.
    static func match(_ input: OpaquePointer, available: Int) -> Match {
        let n = min(available, bytes.count)
        var head = [UInt8](repeating: 0, count: n)
        let copied = Int(evbuffer_copyout(input, &head, n))
        guard copied == n, head.elementsEqual(bytes.prefix(n)) else { return .differs }
        return n == bytes.count ? .matches : .needMore
    }
}
