import FleetTokenProxy

/// `HeaderLine.parseFile` and `HeaderLine.parse` (docs/CONTRACT.md §6 `--provider-header-file`). Promises:
/// every header they accept has a token name that is not one the sidecar owns, and a non-empty
/// value without CR, LF, NUL or other control bytes (HTAB aside) or outer whitespace, so it
/// cannot add or split a line of the request sent to the provider.
public enum HeaderFileInvariant: ParserInvariant {
    public static let name = "header-file"
    static let owned = ["host", "content-length", "transfer-encoding", "connection", "keep-alive",
                        "proxy-connection", "te", "trailer", "upgrade"]

    public static func check(_ input: UnsafeRawBufferPointer) throws(InvariantViolation) {
        let text = String(decoding: input, as: UTF8.self)
        if let headers = try? HeaderLine.parseFile(contents: text) {
            for header in headers { try checkHeader(header) }
            let lines = text.utf8.split(separator: 0x0A).count
            try expect(headers.count <= lines, "more headers than lines")
        }
        if let header = try? HeaderLine.parse(text) { try checkHeader(header) }
    }

    static func checkHeader(_ header: (name: String, value: String)) throws(InvariantViolation) {
        try expect(ByteRules.isToken(header.name), "header name is not a token")
        try expect(!owned.contains(header.name.lowercased()), "accepted a header the sidecar owns")
        try expect(!header.value.isEmpty && ByteRules.isFieldValue(header.value), "header value is empty or has a control byte")
    }
}
