/// gRPC status codes as the sidecar reads them off an answer (docs/CONTRACT.md §5, "What a call
/// is recorded as"): the value of a `grpc-status` field, and what a client's library makes of
/// an answer that has none. Every result is one of the 17 codes, 0–16, so a metric label made
/// from one stays bounded whatever an upstream sends.
enum GRPCStatus {
    static let unknown = 2
    static let permissionDenied = 7
    static let unimplemented = 12
    static let `internal` = 13
    static let unavailable = 14
    static let unauthenticated = 16
    /// The highest code gRPC defines (UNAUTHENTICATED).
    static let highest = 16

    /// The status a `grpc-status` value gives: its decimal value when that is a code, else
    /// UNKNOWN (as a client's library reads a code it does not know). At most three digits are
    /// read: a longer value cannot be a code.
    static func parse(_ value: ByteView) -> Int {
        guard value.count > 0, value.count <= 3 else { return unknown }
        var n = 0
        for byte in value.buffer {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return unknown }
            n = n * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return n <= highest ? n : unknown
    }

    /// The status a client gives an answer with HTTP `status` and no `grpc-status`: gRPC's
    /// HTTP-to-gRPC mapping (a 200 without one is UNKNOWN).
    static func fromHTTP(_ status: Int) -> Int {
        switch status {
        case 400: return `internal`
        case 401: return unauthenticated
        case 403: return permissionDenied
        case 404: return unimplemented
        case 429, 502, 503, 504: return unavailable
        default: return unknown
        }
    }
}
