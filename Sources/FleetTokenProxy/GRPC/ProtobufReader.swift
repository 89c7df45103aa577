/// Reads the protobuf wire format (https://protobuf.dev/programming-guides/encoding/) one
/// field at a time, without a schema: enough to find the few string fields that name a Fleet
/// Engine entity in a request message.
///
/// It never reads outside `bytes`: every varint, fixed-width value and length is checked
/// against what is left before it is read, and lengths are compared as `UInt64` so a huge one
/// cannot overflow `Int`. Groups (wire types 3 and 4, absent from proto3) are refused rather
/// than skipped, since skipping them means matching nested start/end tags.
package struct ProtobufReader {
    /// The four wire types the reader accepts.
    enum WireType: UInt8, Sendable {
        case varint = 0
        case fixed64 = 1
        case lengthDelimited = 2
        case fixed32 = 5
    }

    /// One field's value. A length-delimited value (string, bytes, embedded message, packed
    /// repeated field) is a view into the reader's buffer.
    package enum Value {
        case varint(UInt64)
        case fixed64(UInt64)
        case lengthDelimited(UnsafeRawBufferPointer)
        case fixed32(UInt32)

        var wireType: WireType {
            switch self {
            case .varint: return .varint
            case .fixed64: return .fixed64
            case .lengthDelimited: return .lengthDelimited
            case .fixed32: return .fixed32
            }
        }
    }

    /// A field as it appears on the wire.
    package struct Field {
        /// 1 ... 2²⁹−1.
        package var number: Int
        package var value: Value
        /// Where the field's tag starts, counted from the start of the outermost message.
        package var offset: Int
        /// Where a length-delimited value's bytes start (after its length), same origin.
        package var valueOffset: Int
    }

    /// The largest field number protobuf allows.
    package static let maxFieldNumber = (1 << 29) - 1

    package let bytes: UnsafeRawBufferPointer
    /// The next byte to read, relative to `bytes`.
    package private(set) var offset = 0
    /// Where `bytes` starts inside the outermost message, so errors from an embedded message
    /// name a position in the message as sent.
    package let origin: Int

    package init(_ bytes: UnsafeRawBufferPointer, origin: Int = 0) {
        self.bytes = bytes
        self.origin = origin
    }

    /// A reader over the contents of an embedded message field.
    package init(embeddedIn field: Field) throws(ProtobufError) {
        guard case .lengthDelimited(let contents) = field.value else {
            throw .unexpectedWireType(field: field.number, wireType: Int(field.value.wireType.rawValue), offset: field.offset)
        }
        self.init(contents, origin: field.valueOffset)
    }

    package var isAtEnd: Bool { offset >= bytes.count }

    /// The next field, or nil at the end of the message. After an error the reader must not
    /// be used again.
    package mutating func next() throws(ProtobufError) -> Field? {
        guard let tag = try nextTag() else { return nil }
        let value: Value
        var valueOffset = offset
        switch tag.wireType {
        case 0:
            value = .varint(try readVarint())
        case 1:
            try need(8, for: tag)
            value = .fixed64(UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
            offset += 8
        case 2:
            valueOffset = try skipLength(for: tag)
            value = .lengthDelimited(UnsafeRawBufferPointer(rebasing: bytes[valueOffset..<offset]))
            valueOffset += origin
        case 5:
            try need(4, for: tag)
            value = .fixed32(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
            offset += 4
        default:
            throw Self.unsupported(tag)
        }
        return Field(number: tag.number, value: value, offset: tag.offset, valueOffset: valueOffset)
    }

    /// A field's tag: its number, wire type and where it starts (outermost-message offset).
    struct Tag {
        var number: Int
        var wireType: UInt8
        var offset: Int
    }

    /// Reads the next tag, leaving the reader at the field's value; nil at the end.
    mutating func nextTag() throws(ProtobufError) -> Tag? {
        guard offset < bytes.count else { return nil }
        let start = origin + offset
        let tag = try readVarint()
        // Tags are uint32 on the wire; a number above 2^29-1 is not a field.
        guard tag <= UInt64(UInt32.max), tag >> 3 != 0 else { throw .invalidFieldNumber(offset: start) }
        return Tag(number: Int(tag >> 3), wireType: UInt8(tag & 7), offset: start)
    }

    /// Steps over the value of the field whose tag was just read, checking it as `next()` does
    /// but without building a `Value`: the router skips most fields of a message.
    mutating func skipValue(of tag: Tag) throws(ProtobufError) {
        switch tag.wireType {
        case 0: _ = try readVarint()
        case 1: try need(8, for: tag); offset += 8
        case 2: _ = try skipLength(for: tag)
        case 5: try need(4, for: tag); offset += 4
        default: throw Self.unsupported(tag)
        }
    }

    /// Reads a length and steps over that many bytes; returns where they start (relative to
    /// `bytes`). Lengths are compared as UInt64: a huge one cannot overflow `Int`.
    mutating func skipLength(for tag: Tag) throws(ProtobufError) -> Int {
        let length = try readVarint()
        let available = bytes.count - offset
        guard length <= UInt64(available) else {
            throw .lengthBeyondEnd(field: tag.number, length: length, available: available, offset: tag.offset)
        }
        let start = offset
        offset += Int(length)
        return start
    }

    /// A base-128 varint of at most 10 bytes whose value fits in 64 bits.
    @inline(__always)
    mutating func readVarint() throws(ProtobufError) -> UInt64 {
        // Tags, lengths and small numbers are one byte: the common case.
        if offset < bytes.count {
            let byte = bytes[offset]
            if byte < 0x80 {
                offset += 1
                return UInt64(byte)
            }
        }
        return try readLongVarint()
    }

    private mutating func readLongVarint() throws(ProtobufError) -> UInt64 {
        let start = offset
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard offset < bytes.count else { throw .truncated(offset: origin + start) }
            let byte = bytes[offset]
            offset += 1
            // The tenth byte holds bit 63 only: anything more is longer than 64 bits, and a
            // continuation bit there would make an eleventh byte.
            if shift == 63 && byte > 1 { throw .varintTooLong(offset: origin + start) }
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
        }
    }

    private func need(_ count: Int, for tag: Tag) throws(ProtobufError) {
        guard bytes.count - offset >= count else { throw .truncated(offset: tag.offset) }
    }

    /// Groups (3, 4) and the undefined wire types (6, 7).
    private static func unsupported(_ tag: Tag) -> ProtobufError {
        tag.wireType == 3 || tag.wireType == 4
            ? .group(field: tag.number, offset: tag.offset)
            : .invalidWireType(Int(tag.wireType), field: tag.number, offset: tag.offset)
    }
}

// MARK: - Finding a field

extension ProtobufReader {
    /// What a search for a singular string (or embedded message) field found.
    package enum Lookup {
        case missing
        case found(UnsafeRawBufferPointer)
        /// The field appears more than once. Protobuf parsers keep the last value, so a router
        /// that took the first could key a call on another entity than the one the server acts
        /// on; the caller refuses such a message instead.
        case repeated
    }

    /// The length-delimited field at `path` in `message`: `[3]` is field 3, `[3, 1]` is field
    /// 1 of the embedded message in field 3.
    ///
    /// Every occurrence counts, with protobuf's merge rule for embedded messages: field 3 sent
    /// twice is one message, so `[3, 1]` is `.found` when exactly one of them holds field 1.
    /// Each level on the path is read to its end (fields off the path are skipped, not
    /// parsed), so a malformed field anywhere at those levels is an error. Recursion is as deep
    /// as `path` is long.
    package static func lengthDelimitedField(
        at path: ArraySlice<Int>, in message: UnsafeRawBufferPointer
    ) throws(ProtobufError) -> Lookup {
        var reader = ProtobufReader(message)
        var count = 0
        var last: UnsafeRawBufferPointer?
        try reader.collect(path, count: &count, last: &last)
        switch count {
        case 0: return .missing
        case 1: return .found(last!)
        default: return .repeated
        }
    }

    private mutating func collect(
        _ path: ArraySlice<Int>, count: inout Int, last: inout UnsafeRawBufferPointer?
    ) throws(ProtobufError) {
        guard let wanted = path.first else { return }
        let rest = path.dropFirst()
        while let tag = try nextTag() {
            guard tag.number == wanted else {
                try skipValue(of: tag)
                continue
            }
            guard tag.wireType == 2 else {
                throw .unexpectedWireType(field: tag.number, wireType: Int(tag.wireType), offset: tag.offset)
            }
            let start = try skipLength(for: tag)
            let contents = UnsafeRawBufferPointer(rebasing: bytes[start..<offset])
            if rest.isEmpty {
                count += 1
                last = contents
            } else {
                var inner = ProtobufReader(contents, origin: origin + start)
                try inner.collect(rest, count: &count, last: &last)
            }
        }
    }
}

/// Why bytes are not a protobuf message (or not the one expected). Offsets count from the
/// start of the outermost message.
package enum ProtobufError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The message ends inside the field (or varint) starting at `offset`.
    case truncated(offset: Int)
    /// A varint longer than 10 bytes or with a value above 2⁶⁴−1.
    case varintTooLong(offset: Int)
    /// Field number 0, or a tag above 32 bits.
    case invalidFieldNumber(offset: Int)
    /// A length-delimited field claims more bytes than the message has left.
    case lengthBeyondEnd(field: Int, length: UInt64, available: Int, offset: Int)
    /// Wire type 3 or 4 (a group).
    case group(field: Int, offset: Int)
    /// Wire type 6 or 7.
    case invalidWireType(Int, field: Int, offset: Int)
    /// A field the caller reads as a string or message came with another wire type.
    case unexpectedWireType(field: Int, wireType: Int, offset: Int)

    package var description: String {
        switch self {
        case .truncated(let offset):
            return "the message ends inside the field at byte \(offset)"
        case .varintTooLong(let offset):
            return "the varint at byte \(offset) is longer than 64 bits"
        case .invalidFieldNumber(let offset):
            return "invalid field number at byte \(offset)"
        case .lengthBeyondEnd(let field, let length, let available, let offset):
            return "field \(field) at byte \(offset) claims \(length) bytes but only \(available) are left"
        case .group(let field, let offset):
            return "field \(field) at byte \(offset) is a group (wire type 3/4), which proto3 messages never hold"
        case .invalidWireType(let type, let field, let offset):
            return "field \(field) at byte \(offset) has invalid wire type \(type)"
        case .unexpectedWireType(let field, let type, let offset):
            return "field \(field) at byte \(offset) has wire type \(type) where a string or message (2) is expected"
        }
    }
}
