import FleetTokenProxy

/// Where a message head ends, as both head parsers (request and response) promise it: the
/// parser is stateless, so a prefix it decided on decides the whole input; an accepted head
/// ends in CRLF CRLF, is read the same from its own bytes alone, and is not complete one byte
/// earlier (an incomplete head is never refused for being short); a head still incomplete is
/// under the head bound. Returns the accepted head and its length, nil for a refused input.
enum HeadBoundary {
    static func accepted<Head>(
        _ input: UnsafeRawBufferPointer, maxHeadBytes: Int, minimumLength: Int,
        parse: (UnsafeRawBufferPointer) -> HeadParseResult<Head>, same: (Head, Head) -> Bool
    ) throws(InvariantViolation) -> (Head, Int)? {
        let result = parse(input)
        guard case .complete(let head, let length) = result else {
            if input.count > 0, case .complete = parse(UnsafeRawBufferPointer(rebasing: input.dropLast())) {
                throw InvariantViolation("a prefix is a complete head but the whole input is not")
            }
            if case .incomplete = result {
                try expect(input.count < maxHeadBytes, "still incomplete at the head bound")
            }
            return nil
        }
        try expect(length >= minimumLength && length <= input.count, "head length \(length) out of range")
        try expect(input[(length - 4)..<length].elementsEqual([13, 10, 13, 10]), "head does not end in CRLF CRLF")
        guard case .complete(let again, length) = parse(UnsafeRawBufferPointer(rebasing: input[..<length])), same(head, again) else {
            throw InvariantViolation("the head alone is not read as the same head")
        }
        guard case .incomplete = parse(UnsafeRawBufferPointer(rebasing: input[..<(length - 1)])) else {
            throw InvariantViolation("one byte short of its end the head is not incomplete")
        }
        return (head, length)
    }

    /// A head written out again with single spaces and `name: value` lines must be read
    /// again, to its last byte, as the same head.
    static func reread<Head>(
        _ serialized: String, as head: Head,
        parse: (UnsafeRawBufferPointer) -> HeadParseResult<Head>, same: (Head, Head) -> Bool
    ) throws(InvariantViolation) {
        let bytes = Array(serialized.utf8)
        guard case .complete(let copy, let copyLength) = bytes.withUnsafeBytes(parse) else {
            throw InvariantViolation("the re-serialised head is refused")
        }
        try expect(copyLength == bytes.count, "the re-serialised head is read to byte \(copyLength) of \(bytes.count)")
        try expect(same(head, copy), "the re-serialised head is read differently")
    }

    /// Every field of an accepted head, request or response: a token name and a value with no
    /// control byte or outer whitespace.
    static func checkFieldLines(_ headers: HTTPHeaders) throws(InvariantViolation) {
        for field in headers.fields {
            try expect(ByteRules.isToken(field.name), "header name is not a token")
            try expect(ByteRules.isFieldValue(field.value), "header value has a control byte or outer whitespace")
        }
    }

    static func fieldLines(_ headers: HTTPHeaders) -> String {
        headers.fields.map { "\($0.name): \($0.value)\r\n" }.joined() + "\r\n"
    }

    static func sameFields(_ a: HTTPHeaders, _ b: HTTPHeaders) -> Bool {
        a.fields.elementsEqual(b.fields) { $0.name == $1.name && $0.value.utf8.elementsEqual($1.value.utf8) }
    }
}
