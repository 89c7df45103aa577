/// The outcome of looking for a message head at the start of a connection's input.
package enum HeadParseResult<Head> {
    /// The head does not end within the bytes so far: call again when more have arrived.
    case incomplete
    /// A whole head. Its `headLength` bytes (leading empty lines, start line, field lines and
    /// the final CRLF) can be dropped from the input; the body or next message follows.
    case complete(Head, headLength: Int)
    /// Not acceptable HTTP/1.x, or over a limit: answer 400/413 (or drop the upstream) and close.
    case invalid(ProxyFailure)
}

extension HeadParseResult: Sendable where Head: Sendable {}

/// A strict HTTP/1.x message-head parser (RFC 9112), one pass over the bytes.
///
/// Strict because the sidecar sits between a client and Fleet Engine: any byte sequence two
/// parsers could read differently (bare LF, obs-fold, Transfer-Encoding next to
/// Content-Length, ...) is refused rather than guessed at, so requests cannot be smuggled.
/// The parser keeps no state between calls; a caller hands it the whole unconsumed input.
package enum HTTP1Parser {
    /// `bytes` is the start of the connection's input. Finds the end of the head (CRLF CRLF)
    /// itself. `.incomplete` if more bytes are needed and `bytes.count < maxHeadBytes`;
    /// `.invalid(.requestTooLarge)` if no head ends within `maxHeadBytes` or there are more
    /// than `maxHeaderCount` field lines.
    package static func parseRequest(
        _ bytes: UnsafeRawBufferPointer, maxHeadBytes: Int, maxHeaderCount: Int
    ) -> HeadParseResult<RequestHead> {
        parse(bytes, maxHeadBytes: maxHeadBytes, maxHeaderCount: maxHeaderCount) { (reader: inout HeadReader) throws(HeadStop) in
            try reader.skipLeadingEmptyLines()
            let line = try reader.readRequestLine()
            var facts = FieldFacts()
            let fields = try reader.readFields(noting: &facts)
            return try facts.requestHead(line: line, fields: fields, in: reader.bytes)
        }
    }

    /// Parses an upstream response head the same way as `parseRequest`; the body framing
    /// also depends on the request method, see `ResponseHead.framing(requestMethod:)`.
    package static func parseResponse(
        _ bytes: UnsafeRawBufferPointer, maxHeadBytes: Int, maxHeaderCount: Int
    ) -> HeadParseResult<ResponseHead> {
        parse(bytes, maxHeadBytes: maxHeadBytes, maxHeaderCount: maxHeaderCount) { (reader: inout HeadReader) throws(HeadStop) in
            let line = try reader.readStatusLine()
            var facts = FieldFacts()
            let fields = try reader.readFields(noting: &facts)
            return try facts.responseHead(line: line, fields: fields, in: reader.bytes)
        }
    }

    /// Runs `body` over the first `maxHeadBytes` of `bytes` and turns running out of bytes
    /// into `.incomplete` or `.requestTooLarge`.
    ///
    /// A call that ends `.incomplete` wastes its pass over the bytes: a caller that parses
    /// again after every read of a head arriving in many small pieces repeats that work; it
    /// can wait until the input holds a CRLF CRLF instead.
    private static func parse<Head>(
        _ bytes: UnsafeRawBufferPointer, maxHeadBytes: Int, maxHeaderCount: Int,
        _ body: (inout HeadReader) throws(HeadStop) -> Head
    ) -> HeadParseResult<Head> {
        let limit = min(bytes.count, max(maxHeadBytes, 0))
        func tooLarge() -> HeadParseResult<Head> { .invalid(.requestTooLarge("message head over \(maxHeadBytes) bytes")) }
        guard limit > 0, let base = bytes.baseAddress else { return maxHeadBytes > 0 ? .incomplete : tooLarge() }
        // Connection input is plain bytes (`char` from libevent): reading it as UInt8 is allowed.
        let head = HeadBytes(base: base.assumingMemoryBound(to: UInt8.self), count: limit)
        var reader = HeadReader(bytes: head, maxFieldLines: max(maxHeaderCount, 0))
        do throws(HeadStop) {
            return .complete(try body(&reader), headLength: reader.index)
        } catch {
            switch error {
            case .needMore: return bytes.count < maxHeadBytes ? .incomplete : tooLarge()
            case .invalid(let failure): return .invalid(failure)
            }
        }
    }
}

/// Why a pass over a head stopped early.
enum HeadStop: Error {
    /// The bytes so far are a valid prefix of a head that does not end yet.
    case needMore
    case invalid(ProxyFailure)

    static func malformed(_ message: String) -> HeadStop { .invalid(.malformedRequest(message)) }
}

/// The request line, as byte offsets.
struct RequestLine {
    var method: Range<Int>
    var target: Range<Int>
    var minorVersion: Int
}

/// The status line; the reason is byte offsets.
struct StatusLine {
    var minorVersion: Int
    var status: Int
    var reason: Range<Int>
}

/// The bytes of a head as a plain pointer and count: unlike `UnsafeRawBufferPointer` there is
/// no optional base address to check again on every access in the per-byte loops.
///
/// Invariant: `base` points at `count` bytes the caller of the parse keeps alive and unchanged
/// for the whole parse; every index the parser uses is below `count` (its loops check before
/// they read, so the subscript does not check again).
struct HeadBytes {
    let base: UnsafePointer<UInt8>
    let count: Int

    @inline(__always)
    subscript(i: Int) -> UInt8 { base[i] }

    /// Eight bytes from `i` on, in any alignment.
    @inline(__always)
    func word(at i: Int) -> UInt64 { UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self) }

    /// Decodes a slice of ASCII (a token or a request target, already validated) as a String.
    func string(_ range: Range<Int>) -> String { view(range).string }

    /// A method token as a String: the ones Fleet Engine routes take (and HEAD) are literals,
    /// which cost neither an allocation nor a decoding pass.
    func method(_ range: Range<Int>) -> String {
        switch range.count {
        case 3:
            if view(range) == "GET" { return "GET" }
            if view(range) == "PUT" { return "PUT" }
        case 4:
            if view(range) == "POST" { return "POST" }
            if view(range) == "HEAD" { return "HEAD" }
        case 5:
            if view(range) == "PATCH" { return "PATCH" }
        case 6:
            if view(range) == "DELETE" { return "DELETE" }
        default:
            break
        }
        return string(range)
    }

    /// The bytes of `range`, for comparing with literals.
    @inline(__always)
    func view(_ range: Range<Int>) -> ByteView { ByteView(start: base + range.lowerBound, count: range.count) }


    /// No byte of `range` is 0x80 or above; eight bytes at a time.
    @inline(__always)
    func isASCII(_ range: Range<Int>) -> Bool {
        var i = range.lowerBound
        var high: UInt64 = 0
        while i + 8 <= range.upperBound { high |= word(at: i); i += 8 }
        while i < range.upperBound { high |= UInt64(base[i]); i += 1 }
        return high & 0x8080_8080_8080_8080 == 0
    }

    /// Refuses a field value or reason phrase whose obs-text (bytes 0x80 and above) is not
    /// UTF-8: as a `String` it would be rewritten to U+FFFD, which would change what is relayed.
    func checkText(_ range: Range<Int>, what: StaticString) throws(HeadStop) {
        // Almost every value is ASCII, which is valid UTF-8 as it stands.
        if isASCII(range) { return }
        let buffer = UnsafeBufferPointer(start: base + range.lowerBound, count: range.count)
        if String(validating: buffer, as: UTF8.self) != nil { return }
        throw .malformed("\(what) holds bytes that are not UTF-8 (obs-text is relayed only as UTF-8)")
    }

    /// A field value or reason phrase as a String that holds exactly its bytes (see `checkText`).
    func text(_ range: Range<Int>, what: StaticString) throws(HeadStop) -> String {
        try checkText(range, what: what)
        return String(decoding: UnsafeBufferPointer(start: base + range.lowerBound, count: range.count), as: UTF8.self)
    }
}

/// A cursor over a head's bytes. Every method throws `.needMore` when it runs off the end
/// before it can decide, and `.invalid` as soon as the bytes cannot begin a valid head.
struct HeadReader {
    let bytes: HeadBytes
    let maxFieldLines: Int
    var index = 0

    init(bytes: HeadBytes, maxFieldLines: Int) {
        self.bytes = bytes
        self.maxFieldLines = maxFieldLines
    }

    /// RFC 9112 §2.2: a server should ignore empty lines received before the request line.
    mutating func skipLeadingEmptyLines() throws(HeadStop) {
        while true {
            let b = try peek()
            if b == ASCII.cr {
                try consumeCRLF()
            } else if b == ASCII.lf {
                throw bareLF()
            } else {
                return
            }
        }
    }

    /// `method SP origin-form SP HTTP/1.x CRLF`, single spaces, nothing else.
    mutating func readRequestLine() throws(HeadStop) -> RequestLine {
        let methodStart = index
        index = endOfToken(from: index)
        let method = methodStart..<index
        var b = try peek()
        guard b == ASCII.sp, !method.isEmpty else {
            if b == ASCII.lf { throw bareLF() }
            throw .malformed(method.isEmpty ? "request line does not start with a method"
                                            : "invalid character in method at byte \(index)")
        }
        index += 1

        b = try peek()
        guard b == ASCII.slash else {
            if b == ASCII.sp { throw .malformed("more than one space after the method") }
            if b == ASCII.lf { throw bareLF() }
            throw .malformed("request target is not in origin form (must start with /)")
        }
        let targetStart = index
        index = endOfVisible(from: index)
        let target = targetStart..<index
        b = try peek()
        guard b == ASCII.sp else {
            if b == ASCII.lf { throw bareLF() }
            if b == ASCII.cr { throw .malformed("request line has no HTTP version") }
            throw .malformed("invalid byte \(ASCII.hex(b)) in request target at byte \(index)")
        }
        index += 1

        let minor = try readVersion()
        try consumeLineEnd(after: "HTTP version")
        return RequestLine(method: method, target: target, minorVersion: minor)
    }

    /// `HTTP/1.x SP 3DIGIT [SP reason] CRLF`.
    mutating func readStatusLine() throws(HeadStop) -> StatusLine {
        let minor = try readVersion()
        var b = try peek()
        guard b == ASCII.sp else {
            if b == ASCII.lf { throw bareLF() }
            throw .malformed("status line has no space after the HTTP version")
        }
        index += 1

        var status = 0
        for _ in 0..<3 {
            let digit = try peek() &- ASCII.zero
            guard digit < 10 else { throw .malformed("status code is not three digits") }
            status = status * 10 + Int(digit)
            index += 1
        }
        guard status >= 100 else { throw .malformed("status code \(status) is below 100") }

        b = try peek()
        var reason = index..<index
        if b == ASCII.sp {
            index += 1
            let reasonStart = index
            index = endOfFieldValue(from: index).end
            reason = reasonStart..<index
            b = try peek()
        }
        switch b {
        case ASCII.cr: try consumeCRLF()
        case ASCII.lf: throw bareLF()
        case ASCII.zero...ASCII.nine: throw .malformed("status code is not three digits")
        default: throw .malformed("invalid byte \(ASCII.hex(b)) in status line at byte \(index)")
        }
        return StatusLine(minorVersion: minor, status: status, reason: reason)
    }

    /// Reads field lines up to and including the empty line that ends the head, telling
    /// `facts` about each one, and copies the head's bytes with its lines (the input is
    /// drained once the head is parsed). The lines gather in temporary memory (on the stack)
    /// first, so that copy is the one allocation.
    mutating func readFields(noting facts: inout FieldFacts) throws(HeadStop) -> HeadFields {
        var stop: HeadStop?
        let fields: HeadFields? = withUnsafeTemporaryAllocation(of: HeadFields.Line.self, capacity: Self.linesOnStack) { room in
            do throws(HeadStop) {
                return try readFields(noting: &facts, into: room)
            } catch {
                stop = error
                return nil
            }
        }
        if let stop { throw stop }
        return fields!
    }

    /// Field lines gathered on the stack; a head with more moves them to an array.
    static let linesOnStack = 32

    private mutating func readFields(
        noting facts: inout FieldFacts, into room: UnsafeMutableBufferPointer<HeadFields.Line>
    ) throws(HeadStop) -> HeadFields {
        var count = 0
        var spilled: [HeadFields.Line] = []
        while true {
            let first = try peek()
            switch first {
            case ASCII.cr:
                try consumeCRLF()
                let head = UnsafeBufferPointer(start: bytes.base, count: index)
                if count <= room.count {
                    return HeadFields(bytes: head, lines: UnsafeBufferPointer(rebasing: room[..<count]))
                }
                return spilled.withUnsafeBufferPointer { HeadFields(bytes: head, lines: $0) }
            case ASCII.lf:
                throw bareLF()
            case ASCII.sp, ASCII.htab:
                // RFC 9112 §5.2: obs-fold is refused; §2.2: so is whitespace after the start line.
                throw .malformed("line folding (line starting with whitespace) at byte \(index)")
            default:
                break
            }
            guard count < maxFieldLines else {
                throw .invalid(.requestTooLarge("more than \(maxFieldLines) header fields"))
            }
            let (name, value, ascii) = try readFieldLine()
            try facts.note(name: name, value: value, in: bytes)
            if !ascii { try bytes.checkText(value, what: "header value") }
            let line = HeadFields.Line(name: name, value: value)
            if count < room.count {
                (room.baseAddress! + count).initialize(to: line)
            } else {
                if spilled.isEmpty { spilled.append(contentsOf: room) }
                spilled.append(line)
            }
            count += 1
        }
    }

    /// `token ":" OWS value OWS CRLF` with no whitespace before the colon. `ascii`: the value
    /// has no byte 0x80 or above.
    private mutating func readFieldLine() throws(HeadStop) -> (name: Range<Int>, value: Range<Int>, ascii: Bool) {
        let nameStart = index
        index = endOfToken(from: index)
        let name = nameStart..<index
        let c = try peek()
        guard c == ASCII.colon, !name.isEmpty else {
            switch c {
            case ASCII.colon: throw .malformed("empty header name at byte \(index)")
            case ASCII.sp, ASCII.htab: throw .malformed("whitespace before colon in header at byte \(index)")
            case ASCII.lf: throw bareLF()
            case ASCII.cr: throw .malformed("header line without colon at byte \(index)")
            default: throw .malformed("invalid byte \(ASCII.hex(c)) in header name at byte \(index)")
            }
        }
        index += 1

        var valueStart = index
        while valueStart < bytes.count, ASCII.isWhitespace(bytes[valueStart]) { valueStart += 1 }
        let (valueScanEnd, ascii) = endOfFieldValue(from: valueStart)
        index = valueScanEnd
        var valueEnd = index
        while valueEnd > valueStart, ASCII.isWhitespace(bytes[valueEnd - 1]) { valueEnd -= 1 }
        switch try peek() {
        case ASCII.cr: try consumeCRLF()
        case ASCII.lf: throw bareLF()
        case let b: throw .malformed("control byte \(ASCII.hex(b)) in header value at byte \(index)")
        }
        return (name, valueStart..<valueEnd, ascii)
    }

    /// `HTTP/1.0` or `HTTP/1.1`: one compare when all eight bytes are there, else byte by
    /// byte so a wrong version fails before the rest arrives.
    private mutating func readVersion() throws(HeadStop) -> Int {
        if index + 8 <= bytes.count {
            switch UInt64(littleEndian: bytes.word(at: index)) {
            case 0x312E_312F_5054_5448: index += 8; return 1  // "HTTP/1.1"
            case 0x302E_312F_5054_5448: index += 8; return 0  // "HTTP/1.0"
            default: throw .malformed("unsupported HTTP version (only HTTP/1.0 and HTTP/1.1)")
            }
        }
        for expected in "HTTP/1.".utf8 {
            guard try peek() == expected else {
                throw .malformed("unsupported HTTP version (only HTTP/1.0 and HTTP/1.1)")
            }
            index += 1
        }
        let minor = try peek() &- ASCII.zero
        guard minor <= 1 else { throw .malformed("unsupported HTTP version (only HTTP/1.0 and HTTP/1.1)") }
        index += 1
        return Int(minor)
    }

    @inline(__always)
    private func peek() throws(HeadStop) -> UInt8 {
        guard index < bytes.count else { throw .needMore }
        return bytes[index]
    }

    // The scanning loops below keep their position in a local, not in `index`: the compiler
    // will not keep a stored property in a register across a loop, and these run per byte.

    /// The first index at or after `start` that does not hold a tchar.
    @inline(__always)
    private func endOfToken(from start: Int) -> Int {
        var i = start
        while i < bytes.count, ASCII.isTokenByte(bytes[i]) { i += 1 }
        return i
    }

    /// The first index at or after `start` that does not hold a VCHAR; eight bytes at a time
    /// while they all are.
    private func endOfVisible(from start: Int) -> Int {
        var i = start
        while i + 8 <= bytes.count, !SWAR.hasNonVisible(bytes.word(at: i)) { i += 8 }
        while i < bytes.count, ASCII.isVisible(bytes[i]) { i += 1 }
        return i
    }

    /// The first index at or after `start` that holds a control byte other than HTAB (CR
    /// ends a well-formed value); eight bytes at a time while none does. `ascii`: no byte
    /// before it is 0x80 or above (worked out on the way: no second pass for `checkText`).
    private func endOfFieldValue(from start: Int) -> (end: Int, ascii: Bool) {
        var i = start
        var high: UInt64 = 0
        while i + 8 <= bytes.count {
            let word = bytes.word(at: i)
            if SWAR.hasControl(word) { break }
            high |= word
            i += 8
        }
        while i < bytes.count, ASCII.isFieldValueByte(bytes[i]) {
            high |= UInt64(bytes[i])
            i += 1
        }
        return (i, high & 0x8080_8080_8080_8080 == 0)
    }

    /// At a CR: requires the LF after it.
    @inline(__always)
    private mutating func consumeCRLF() throws(HeadStop) {
        guard index + 1 < bytes.count else { throw .needMore }
        guard bytes[index + 1] == ASCII.lf else { throw .malformed("bare CR at byte \(index)") }
        index += 2
    }

    /// Requires CRLF right here.
    private mutating func consumeLineEnd(after what: StaticString) throws(HeadStop) {
        switch try peek() {
        case ASCII.cr: try consumeCRLF()
        case ASCII.lf: throw bareLF()
        default: throw .malformed("unexpected byte after \(what) at byte \(index)")
        }
    }

    private func bareLF() -> HeadStop { .malformed("bare LF (line not ended by CRLF) at byte \(index)") }
}

/// What the framing-relevant fields of a head say, gathered from the bytes as they are read.
struct FieldFacts {
    var contentLength: Int?
    var transferEncodingLines = 0
    /// The only Transfer-Encoding line's whole value is `chunked`.
    var transferEncodingIsExactlyChunked = false
    /// The last coding of the last Transfer-Encoding line is `chunked`.
    var chunkedIsFinalCoding = false
    var connectionClose = false
    var connectionKeepAlive = false
    var expectsContinue = false
    var hostLines = 0

    /// Takes one field line into account; throws at once on a bad or conflicting
    /// Content-Length.
    mutating func note(name: Range<Int>, value: Range<Int>, in bytes: HeadBytes) throws(HeadStop) {
        // Sorting by length first keeps the common case (any other name) to one compare.
        switch name.count {
        case 4 where bytes.view(name).equalsLowercased("host"):
            hostLines += 1
        case 6 where bytes.view(name).equalsLowercased("expect"):
            ASCII.forEachListElement(bytes, value) { element in
                if bytes.view(element).equalsLowercased("100-continue") { expectsContinue = true }
            }
        case 10 where bytes.view(name).equalsLowercased("connection"):
            ASCII.forEachListElement(bytes, value) { element in
                if bytes.view(element).equalsLowercased("close") { connectionClose = true }
                if bytes.view(element).equalsLowercased("keep-alive") { connectionKeepAlive = true }
            }
        case 14 where bytes.view(name).equalsLowercased("content-length"):
            guard let length = ASCII.parseContentLength(bytes, value) else {
                throw .malformed("invalid Content-Length (digits only, at most 2^53)")
            }
            if let earlier = contentLength, earlier != length {
                throw .malformed("conflicting Content-Length values")
            }
            contentLength = length
        case 17 where bytes.view(name).equalsLowercased("transfer-encoding"):
            transferEncodingLines += 1
            transferEncodingIsExactlyChunked = bytes.view(value).equalsLowercased("chunked")
            var last: Range<Int>?
            ASCII.forEachListElement(bytes, value) { element in last = element }
            if let last {
                chunkedIsFinalCoding = bytes.view(ASCII.codingName(bytes, last)).equalsLowercased("chunked")
            }
        default:
            break
        }
    }

    /// RFC 9112 §6.1 and §6.3, refusing every combination a second parser could read differently.
    func requestHead(line: RequestLine, fields: HeadFields, in bytes: HeadBytes) throws(HeadStop) -> RequestHead {
        let minor = line.minorVersion
        if hostLines > 1 { throw .malformed("more than one Host header") }
        if hostLines == 0 && minor == 1 { throw .malformed("HTTP/1.1 request without a Host header") }

        let framing: BodyFraming
        if transferEncodingLines > 0 {
            if contentLength != nil { throw .malformed("both Transfer-Encoding and Content-Length") }
            if minor == 0 { throw .malformed("Transfer-Encoding in an HTTP/1.0 request") }
            guard transferEncodingLines == 1, transferEncodingIsExactlyChunked else {
                throw .malformed("Transfer-Encoding other than exactly chunked")
            }
            framing = .chunked
        } else if let contentLength {
            framing = .contentLength(contentLength)
        } else {
            framing = .none
        }

        return RequestHead(
            method: bytes.method(line.method),
            target: line.target,
            minorVersion: minor,
            fields: fields,
            framing: framing,
            keepAlive: minor == 1 ? !connectionClose : connectionKeepAlive && !connectionClose,
            expectsContinue: minor == 1 && expectsContinue
        )
    }

    /// RFC 9112 §6.3 from the receiving client's side: Transfer-Encoding overrides
    /// Content-Length (but the connection is not reused), and no length means until close.
    func responseHead(line: StatusLine, fields: HeadFields, in bytes: HeadBytes) throws(HeadStop) -> ResponseHead {
        let minor = line.minorVersion
        var keepAlive = minor == 1 ? !connectionClose : connectionKeepAlive && !connectionClose

        let declared: BodyFraming
        if transferEncodingLines > 0 {
            // HTTP/1.0 has no transfer codings (§6.1): treat the framing as faulty, read to close.
            declared = minor == 1 && chunkedIsFinalCoding ? .chunked : .untilClose
            if contentLength != nil { keepAlive = false }
        } else if let contentLength {
            declared = .contentLength(contentLength)
        } else {
            declared = .untilClose
        }
        let statusHasBody = line.status >= 200 && line.status != 204 && line.status != 304
        if declared == .untilClose && statusHasBody { keepAlive = false }

        return ResponseHead(
            minorVersion: minor,
            status: line.status,
            reason: try bytes.text(line.reason, what: "reason phrase"),
            fields: fields,
            keepAlive: keepAlive,
            declaredFraming: declared
        )
    }
}

/// Byte classes and small byte-level helpers of RFC 9110/9112, shared with `ChunkedBodyScanner`.
enum ASCII {
    static let htab: UInt8 = 0x09
    static let lf: UInt8 = 0x0A
    static let cr: UInt8 = 0x0D
    static let sp: UInt8 = 0x20
    static let comma: UInt8 = 0x2C
    static let slash: UInt8 = 0x2F
    static let zero: UInt8 = 0x30
    static let nine: UInt8 = 0x39
    static let colon: UInt8 = 0x3A
    static let semicolon: UInt8 = 0x3B

    /// tchar (RFC 9110 §5.6.2) as a bit set over bytes 0–127:
    /// `!#$%&'*+-.^_`|~`, digits and letters.
    private static let tokenBitsLow: UInt64 = 0x03FF_6CFA_0000_0000
    private static let tokenBitsHigh: UInt64 = 0x57FF_FFFF_C7FF_FFFE

    @inline(__always)
    static func isWhitespace(_ b: UInt8) -> Bool { b == sp || b == htab }

    @inline(__always)
    static func isTokenByte(_ b: UInt8) -> Bool {
        let bits = b < 64 ? tokenBitsLow : tokenBitsHigh
        return b < 128 && (bits >> UInt64(b & 63)) & 1 != 0
    }

    /// VCHAR: 0x21–0x7E.
    @inline(__always)
    static func isVisible(_ b: UInt8) -> Bool { b &- 0x21 < 0x5E }

    /// VCHAR or obs-text (0x80–0xFF).
    @inline(__always)
    static func isVisibleOrObsText(_ b: UInt8) -> Bool { b > 0x20 && b != 0x7F }

    /// field-vchar, SP or HTAB: what may appear inside a field value or a reason phrase.
    @inline(__always)
    static func isFieldValueByte(_ b: UInt8) -> Bool { isVisibleOrObsText(b) || b == sp || b == htab }

    static func hex(_ b: UInt8) -> String {
        let digits: StaticString = "0123456789ABCDEF"
        return digits.withUTF8Buffer { d in
            String(decoding: [0x30, 0x78, d[Int(b >> 4)], d[Int(b & 15)]], as: UTF8.self)
        }
    }

    /// Calls `body` with each non-empty element of a comma-separated list (RFC 9110 §5.6.1),
    /// without surrounding whitespace.
    static func forEachListElement(_ bytes: HeadBytes, _ range: Range<Int>, _ body: (Range<Int>) -> Void) {
        var start = range.lowerBound
        while start <= range.upperBound {
            var end = start
            while end < range.upperBound, bytes[end] != comma { end += 1 }
            let element = trimmed(bytes, start..<end)
            if !element.isEmpty { body(element) }
            start = end + 1
        }
    }

    /// The coding name of a Transfer-Encoding element: what precedes any `;` parameters.
    static func codingName(_ bytes: HeadBytes, _ element: Range<Int>) -> Range<Int> {
        var end = element.lowerBound
        while end < element.upperBound, bytes[end] != semicolon { end += 1 }
        return trimmed(bytes, element.lowerBound..<end)
    }

    static func trimmed(_ bytes: HeadBytes, _ range: Range<Int>) -> Range<Int> {
        var lower = range.lowerBound, upper = range.upperBound
        while lower < upper, bytes[lower] == sp || bytes[lower] == htab { lower += 1 }
        while upper > lower, bytes[upper - 1] == sp || bytes[upper - 1] == htab { upper -= 1 }
        return lower..<upper
    }

    /// 1*DIGIT, at most 2^53 (the largest length every JSON/JavaScript peer agrees on).
    static func parseContentLength(_ bytes: HeadBytes, _ range: Range<Int>) -> Int? {
        guard !range.isEmpty else { return nil }
        var value = 0
        for i in range {
            let digit = bytes[i] &- zero
            guard digit < 10 else { return nil }
            value = value * 10 + Int(digit)
            guard value <= 1 << 53 else { return nil }
        }
        return value
    }
}

/// Tests on eight bytes at once ("SIMD within a register"), exact as yes/no answers: any
/// byte that makes them true sends the caller to its byte-by-byte loop.
enum SWAR {
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// Some byte is below `n` (n ≤ 128).
    @inline(__always)
    static func hasByteBelow(_ word: UInt64, _ n: UInt8) -> Bool {
        (word &- ones &* UInt64(n)) & ~word & highBits != 0
    }

    /// Some byte is 0x7F (DEL).
    @inline(__always)
    static func hasDEL(_ word: UInt64) -> Bool { hasByteBelow(word ^ (ones &* 0x7F), 1) }

    /// Some byte is not VCHAR (0x21–0x7E).
    @inline(__always)
    static func hasNonVisible(_ word: UInt64) -> Bool {
        hasByteBelow(word, 0x21) || word & highBits != 0 || hasDEL(word)
    }

    /// Some byte is a CTL (0x00–0x1F or 0x7F), HTAB included.
    @inline(__always)
    static func hasControl(_ word: UInt64) -> Bool { hasByteBelow(word, 0x20) || hasDEL(word) }
}
