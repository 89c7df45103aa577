/// The status and body of an answer a token source reads whole (the provider's, a Google
/// credential endpoint's), de-chunked by the connection, and never more than `limit` bytes
/// held; past it the body is dropped and `tooLarge` says so.
struct AnswerCollector {
    let limit: Int
    private(set) var status = 0
    private(set) var body: [UInt8] = []
    private(set) var tooLarge = false
    /// The first value of each of `keptFields` the head carried.
    private(set) var fields: [String: String] = [:]
    private let keptFields: [String]

    init(limit: Int, keptFields: [String] = []) {
        self.limit = limit
        self.keptFields = keptFields
    }

    mutating func head(_ head: ResponseHead) {
        status = head.status
        if !keptFields.isEmpty {
            let headers = head.headers
            for name in keptFields { fields[name] = headers[name] }
        }
    }

    /// Takes a copy of body bytes.
    mutating func take(_ bytes: ByteView) {
        guard !tooLarge && body.count + bytes.count <= limit else {
            tooLarge = true
            return
        }
        body.append(contentsOf: bytes.buffer)
    }
}
