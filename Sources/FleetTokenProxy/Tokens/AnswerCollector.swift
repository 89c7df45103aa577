/// The status and body of an answer a token source reads whole (the provider's, a Google
/// credential endpoint's): de-chunked, and never more than `limit` bytes held; past it the body
/// is dropped and `tooLarge` says so.
struct AnswerCollector {
    let limit: Int
    private(set) var status = 0
    private(set) var body: [UInt8] = []
    private(set) var tooLarge = false
    /// The first value of each of `keptFields` the head carried.
    private(set) var fields: [String: String] = [:]
    private let keptFields: [String]
    private var dechunker: ChunkedBodyScanner?

    init(limit: Int, keptFields: [String] = []) {
        self.limit = limit
        self.keptFields = keptFields
    }

    mutating func head(_ head: ResponseHead, requestMethod: String) {
        status = head.status
        if !keptFields.isEmpty {
            let headers = head.headers
            for name in keptFields { fields[name] = headers[name] }
        }
        if head.framing(requestMethod: requestMethod) == .chunked { dechunker = ChunkedBodyScanner() }
    }

    /// Takes the `count` body bytes at the front of `connection`'s input.
    mutating func take(_ count: Int, from connection: HTTP1UpstreamConnection) {
        if !tooLarge && body.count + count <= limit {
            connection.forEachBodyPiece(count) { piece in
                if var scanner = dechunker {
                    _ = scanner.scan(piece, onData: { body.append(contentsOf: $0) })
                    dechunker = scanner
                } else {
                    body.append(contentsOf: piece)
                }
                return true
            }
        } else {
            tooLarge = true
        }
        connection.dropBody(count)
    }
}
