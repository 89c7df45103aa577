/// `x-goog-user-project`, the field that names the project a Google API bills and checks quota
/// against. With `--signer adc` the sidecar's own credentials authorise the call, so the quota
/// project is theirs to name (docs/CONTRACT.md §4a, as Google's libraries send it): a forwarded
/// call about an entity of such a type carries exactly the sidecar's value, and a client's own is
/// dropped, or a client could bill the sidecar's credentials to a project of its choosing. For
/// other types the client's field travels as it came.
enum QuotaProjectField {
    static let name: StaticString = "x-goog-user-project"

    /// Whether `name` is this field (any case).
    static func isOne(_ name: ByteView) -> Bool {
        name.count == Self.name.utf8CodeUnitCount && name.equalsLowercased("x-goog-user-project")
    }

    /// The field line for an HTTP/1.1 head.
    static func write(_ project: String, to out: inout HeadWriter) {
        out.write(literal: name)
        out.write(literal: ": ")
        out.write(project)
        out.write(literal: "\r\n")
    }
}
