/// The client connection preface of HTTP/2 (RFC 9113 §3.4), which is how an h2c client with
/// prior knowledge, such as a gRPC insecure channel, announces itself on the shared port.
enum HTTP2Preface {
    static let text: StaticString = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
    static var count: Int { text.utf8CodeUnitCount }

    enum Match { case matches, needMore, differs }

    /// Compares the first bytes of a connection's input (as many as arrived, up to `count`)
    /// with the preface.
    static func match(_ input: ByteView) -> Match {
        let n = min(input.count, count)
        let preface = ByteView(start: text.utf8Start, count: n)
        guard input.slice(0..<n) == preface else { return .differs }
        return n == count ? .matches : .needMore
    }
}
