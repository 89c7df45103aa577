/// A tiny protobuf wire-format writer for tests: just enough to build request messages by
/// hand, field by field, in the order a test wants (duplicates and wrong wire types included).
struct ProtobufTestEncoder {
    var bytes: [UInt8] = []

    mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    mutating func tag(_ field: Int, wireType: Int) {
        varint(UInt64(field) << 3 | UInt64(wireType))
    }

    mutating func varintField(_ field: Int, _ value: UInt64) {
        tag(field, wireType: 0)
        varint(value)
    }

    mutating func fixed64Field(_ field: Int, _ value: UInt64) {
        tag(field, wireType: 1)
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func fixed32Field(_ field: Int, _ value: UInt32) {
        tag(field, wireType: 5)
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func bytesField(_ field: Int, _ value: [UInt8]) {
        tag(field, wireType: 2)
        varint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    mutating func stringField(_ field: Int, _ value: String) {
        bytesField(field, Array(value.utf8))
    }

    mutating func messageField(_ field: Int, _ build: (inout ProtobufTestEncoder) -> Void) {
        var inner = ProtobufTestEncoder()
        build(&inner)
        bytesField(field, inner.bytes)
    }

    static func message(_ build: (inout ProtobufTestEncoder) -> Void) -> [UInt8] {
        var encoder = ProtobufTestEncoder()
        build(&encoder)
        return encoder.bytes
    }
}
