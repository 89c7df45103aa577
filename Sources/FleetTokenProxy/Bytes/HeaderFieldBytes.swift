/// A header list walked as bytes: the parsed HTTP/1.1 head's fields (`HeadFields`) and an
/// HTTP/2 header list (`H2HeaderList`) offer the same walk, so a check over field names or
/// values (`RESTRoute.headerRefusal`) is written once for both protocols.
protocol HeaderFieldBytes {
    /// Calls `body` with each field's name and value, in arrival order, until it returns
    /// false. The views are valid only during the call (see `ByteView`).
    func forEach(_ body: (_ name: ByteView, _ value: ByteView) -> Bool)
}

extension HeaderFieldBytes {
    /// What `found` makes of the first field it makes something of; nil when it makes nothing of any.
    @inline(__always)
    func firstNonNil<R>(_ found: (_ name: ByteView, _ value: ByteView) -> R?) -> R? {
        var result: R?
        forEach { name, value in
            result = found(name, value)
            return result == nil
        }
        return result
    }
}
