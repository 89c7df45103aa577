import XCTest
@testable import FleetTokenProxy

final class ProtobufReaderTests: XCTestCase {
    // MARK: - Helpers

    /// Reads every field of `bytes`; the buffer is an exact-size copy, so reading past its
    /// end would leave the allocation.
    private func readAll(_ bytes: [UInt8]) throws(ProtobufError) -> [(number: Int, value: String)] {
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 1)
        defer { copy.deallocate() }
        copy.copyBytes(from: bytes)
        var reader = ProtobufReader(UnsafeRawBufferPointer(copy))
        var fields: [(Int, String)] = []
        while let field = try reader.next() {
            switch field.value {
            case .varint(let v): fields.append((field.number, "varint \(v)"))
            case .fixed64(let v): fields.append((field.number, "fixed64 \(v)"))
            case .fixed32(let v): fields.append((field.number, "fixed32 \(v)"))
            case .lengthDelimited(let b): fields.append((field.number, "bytes \(Array(b))"))
            }
        }
        XCTAssertTrue(reader.isAtEnd)
        return fields
    }

    private func readError(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> ProtobufError? {
        do {
            let fields = try readAll(bytes)
            XCTFail("expected an error, read \(fields)", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    private func lookup(_ path: ArraySlice<Int>, in bytes: [UInt8]) throws(ProtobufError) -> String {
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 1)
        defer { copy.deallocate() }
        copy.copyBytes(from: bytes)
        switch try ProtobufReader.lengthDelimitedField(at: path, in: UnsafeRawBufferPointer(copy)) {
        case .missing: return "missing"
        case .repeated: return "repeated"
        case .found(let value): return "found " + String(decoding: value, as: UTF8.self)
        }
    }

    private func varintBytes(_ value: UInt64) -> [UInt8] {
        var e = ProtobufTestEncoder()
        e.varint(value)
        return e.bytes
    }

    /// A message shaped like an UpdateTaskRequest, with fields of every wire type around the
    /// one a route reads; `boundaries` are the offsets where a top-level field starts or ends.
    private func sampleMessage() -> (bytes: [UInt8], boundaries: Set<Int>) {
        var parts: [[UInt8]] = []
        parts.append(ProtobufTestEncoder.message { $0.messageField(1) { $0.stringField(1, "en-US"); $0.varintField(3, 2) } })
        parts.append(ProtobufTestEncoder.message { $0.fixed64Field(9, 0x0102_0304_0506_0708) })
        parts.append(ProtobufTestEncoder.message {
            $0.messageField(3) {
                $0.varintField(2, 1)
                $0.stringField(1, "providers/p/tasks/t-1")
                $0.fixed32Field(7, 42)
                $0.messageField(6) { $0.fixed64Field(1, 7); $0.fixed64Field(2, 8) }
            }
        })
        parts.append(ProtobufTestEncoder.message { $0.varintField(200, 300) })
        parts.append(ProtobufTestEncoder.message { $0.messageField(4) { $0.stringField(1, "state") } })
        var boundaries: Set<Int> = [0]
        var bytes: [UInt8] = []
        for part in parts {
            bytes += part
            boundaries.insert(bytes.count)
        }
        return (bytes, boundaries)
    }

    // MARK: - Varints

    func testVarintsDecodeFromOneToTenBytes() throws {
        for value: UInt64 in [0, 1, 127, 128, 300, 16_383, 16_384, UInt64(UInt32.max), 1 << 62, UInt64.max] {
            let fields = try readAll([0x08] + varintBytes(value))
            XCTAssertEqual(fields.map(\.value), ["varint \(value)"], "value \(value)")
        }
        XCTAssertEqual(varintBytes(UInt64.max).count, 10)
        XCTAssertEqual(varintBytes(UInt64.max), [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01])
    }

    func testNonCanonicalTenByteVarintIsAccepted() throws {
        // Padded with continuation bytes but still 10 bytes and 64 bits: valid protobuf.
        let fields = try readAll([0x08] + [0x81] + Array(repeating: 0x80, count: 8) + [0x00])
        XCTAssertEqual(fields.map(\.value), ["varint 1"])
    }

    func testVarintOfElevenBytesIsRefused() {
        let bytes: [UInt8] = [0x08] + Array(repeating: 0x80, count: 10) + [0x00]
        XCTAssertEqual(readError(bytes), .varintTooLong(offset: 1))
    }

    func testVarintAboveSixtyFourBitsIsRefused() {
        let bytes: [UInt8] = [0x08] + Array(repeating: 0xFF, count: 9) + [0x02]
        XCTAssertEqual(readError(bytes), .varintTooLong(offset: 1))
    }

    func testVarintCutShortIsTruncated() {
        XCTAssertEqual(readError([0x08, 0x80, 0x80]), .truncated(offset: 1))
        XCTAssertEqual(readError([0x80]), .truncated(offset: 0))
    }

    // MARK: - Wire types and tags

    func testEachWireTypeIsRead() throws {
        let bytes = ProtobufTestEncoder.message {
            $0.varintField(1, 150)
            $0.fixed64Field(2, 0x1122_3344_5566_7788)
            $0.stringField(3, "hi")
            $0.fixed32Field(4, 0xDEAD_BEEF)
        }
        let fields = try readAll(bytes)
        XCTAssertEqual(fields.map(\.number), [1, 2, 3, 4])
        XCTAssertEqual(fields.map(\.value), [
            "varint 150", "fixed64 \(0x1122_3344_5566_7788 as UInt64)", "bytes [104, 105]", "fixed32 \(0xDEAD_BEEF as UInt32)",
        ])
    }

    func testFixedWidthValuesAreLittleEndian() throws {
        let fields = try readAll([0x0D, 0x01, 0x00, 0x00, 0x00, 0x11, 0x02, 0, 0, 0, 0, 0, 0, 0])
        XCTAssertEqual(fields.map(\.value), ["fixed32 1", "fixed64 2"])
    }

    func testFixedWidthValuesCutShortAreTruncated() {
        XCTAssertEqual(readError([0x0D, 0x01, 0x00, 0x00]), .truncated(offset: 0))
        XCTAssertEqual(readError([0x08, 0x01, 0x11, 0x02, 0, 0, 0, 0, 0, 0]), .truncated(offset: 2))
    }

    func testGroupsAreRefused() {
        XCTAssertEqual(readError([0x0B, 0x0C]), .group(field: 1, offset: 0))   // start group, field 1
        XCTAssertEqual(readError([0x08, 0x00, 0x14]), .group(field: 2, offset: 2)) // end group, field 2
    }

    func testWireTypesSixAndSevenAreRefused() {
        XCTAssertEqual(readError([0x0E, 0x00]), .invalidWireType(6, field: 1, offset: 0))
        XCTAssertEqual(readError([0x0F]), .invalidWireType(7, field: 1, offset: 0))
    }

    func testFieldNumberZeroIsRefused() {
        XCTAssertEqual(readError([0x00, 0x00]), .invalidFieldNumber(offset: 0))
        XCTAssertEqual(readError([0x02, 0x00]), .invalidFieldNumber(offset: 0))
    }

    func testTagAboveThirtyTwoBitsIsRefused() {
        // Field 2^29 as wire type 0 would need a 33-bit tag.
        XCTAssertEqual(readError(varintBytes(UInt64(1) << 32) + [0x00]), .invalidFieldNumber(offset: 0))
    }

    func testLargestFieldNumberIsAccepted() throws {
        var e = ProtobufTestEncoder()
        e.varintField(ProtobufReader.maxFieldNumber, 5)
        XCTAssertEqual(try readAll(e.bytes).map(\.number), [ProtobufReader.maxFieldNumber])
    }

    // MARK: - Lengths

    func testLengthPastTheEndIsRefused() {
        // Field 3, length 5, 3 bytes present.
        XCTAssertEqual(readError([0x1A, 0x05, 0x61, 0x62, 0x63]),
                       .lengthBeyondEnd(field: 3, length: 5, available: 3, offset: 0))
    }

    func testHugeLengthsAreRefusedWithoutOverflow() {
        for length in [UInt64(1) << 31, UInt64(1) << 40, UInt64(Int.max), UInt64.max] {
            let bytes = [0x1A] + varintBytes(length) + [0x61]
            XCTAssertEqual(readError(bytes), .lengthBeyondEnd(field: 3, length: length, available: 1, offset: 0), "length \(length)")
        }
    }

    func testEmptyLengthDelimitedFieldIsRead() throws {
        XCTAssertEqual(try readAll([0x1A, 0x00]).map(\.value), ["bytes []"])
    }

    func testEmptyMessageHasNoFields() throws {
        XCTAssertEqual(try readAll([]).count, 0)
        XCTAssertEqual(try lookup([3], in: []), "missing")
    }

    // MARK: - Finding fields

    func testLookupSkipsUnknownFieldsOfEveryWireType() throws {
        let bytes = ProtobufTestEncoder.message {
            $0.varintField(1, UInt64.max)
            $0.fixed64Field(2, 1)
            $0.fixed32Field(4, 1)
            $0.messageField(5) { $0.stringField(3, "inner field 3 is not top-level field 3") }
            $0.stringField(3, "the one")
            $0.varintField(6, 1)
        }
        XCTAssertEqual(try lookup([3], in: bytes), "found the one")
    }

    func testLookupDescendsIntoEmbeddedMessage() throws {
        XCTAssertEqual(try lookup([3, 1], in: sampleMessage().bytes), "found providers/p/tasks/t-1")
        XCTAssertEqual(try lookup([4, 1], in: sampleMessage().bytes), "found state")
        XCTAssertEqual(try lookup([3, 5], in: sampleMessage().bytes), "missing")
    }

    func testLookupOfAbsentFieldIsMissing() throws {
        XCTAssertEqual(try lookup([2], in: sampleMessage().bytes), "missing")
        XCTAssertEqual(try lookup([8, 1], in: sampleMessage().bytes), "missing")
    }

    func testFieldGivenTwiceIsRepeated() throws {
        let top = ProtobufTestEncoder.message { $0.stringField(3, "a"); $0.varintField(1, 1); $0.stringField(3, "b") }
        XCTAssertEqual(try lookup([3], in: top), "repeated")

        let nested = ProtobufTestEncoder.message { $0.messageField(3) { $0.stringField(1, "a"); $0.stringField(1, "a") } }
        XCTAssertEqual(try lookup([3, 1], in: nested), "repeated")
    }

    func testEmbeddedMessageGivenTwiceIsMergedAsProtobufDoes() throws {
        // Protobuf merges repeated occurrences of a singular message field.
        let oneName = ProtobufTestEncoder.message {
            $0.messageField(3) { $0.varintField(2, 1) }
            $0.messageField(3) { $0.stringField(1, "providers/p/tasks/t") }
        }
        XCTAssertEqual(try lookup([3, 1], in: oneName), "found providers/p/tasks/t")

        let twoNames = ProtobufTestEncoder.message {
            $0.messageField(3) { $0.stringField(1, "providers/p/tasks/a") }
            $0.messageField(3) { $0.stringField(1, "providers/p/tasks/b") }
        }
        XCTAssertEqual(try lookup([3, 1], in: twoNames), "repeated")
    }

    func testFieldOnPathWithWrongWireTypeIsRefused() {
        let bytes = ProtobufTestEncoder.message { $0.varintField(2, 1); $0.varintField(3, 7) }
        XCTAssertThrowsError(try lookup([3], in: bytes)) { error in
            XCTAssertEqual(error as? ProtobufError, .unexpectedWireType(field: 3, wireType: 0, offset: 2))
        }
        let nested = ProtobufTestEncoder.message { $0.messageField(3) { $0.fixed32Field(1, 7) } }
        XCTAssertThrowsError(try lookup([3, 1], in: nested)) { error in
            XCTAssertEqual(error as? ProtobufError, .unexpectedWireType(field: 1, wireType: 5, offset: 2))
        }
    }

    func testMalformedFieldAfterTheWantedOneIsStillAnError() {
        // The whole level is read: a message Fleet Engine would refuse is never routed.
        let bytes = ProtobufTestEncoder.message { $0.stringField(3, "x") } + [0x0B]
        XCTAssertThrowsError(try lookup([3], in: bytes)) { error in
            XCTAssertEqual(error as? ProtobufError, .group(field: 1, offset: 3))
        }
    }

    func testErrorsInsideEmbeddedMessagesGiveOffsetsInTheWholeMessage() {
        // Field 2 (4 bytes), then field 3 holding field 2 = 8 and a tag cut short at byte 8.
        let bytes: [UInt8] = [0x12, 0x02, 0x61, 0x62, 0x1A, 0x03, 0x10, 0x08, 0x80]
        XCTAssertThrowsError(try lookup([3, 1], in: bytes)) { error in
            XCTAssertEqual(error as? ProtobufError, .truncated(offset: 8))
        }
    }

    func testEmbeddedReaderStartsAtFieldContents() throws {
        let bytes = sampleMessage().bytes
        try bytes.withUnsafeBytes { buffer in
            var outer = ProtobufReader(buffer)
            var field = try XCTUnwrap(outer.next())
            while field.number != 3 { field = try XCTUnwrap(outer.next()) }
            var inner = try ProtobufReader(embeddedIn: field)
            let first = try XCTUnwrap(inner.next())
            XCTAssertEqual(first.number, 2)
            XCTAssertEqual(first.offset, field.valueOffset)
        }
    }

    // MARK: - Hostile input

    func testTruncationAtEveryBytePositionFailsCleanly() throws {
        let (bytes, boundaries) = sampleMessage()
        XCTAssertEqual(try lookup([3, 1], in: bytes), "found providers/p/tasks/t-1")
        var errors = 0
        for cut in 0..<bytes.count {
            let prefix = Array(bytes[..<cut])
            if boundaries.contains(cut) {
                // Cut between fields: a shorter message, still valid.
                XCTAssertNoThrow(try readAll(prefix), "cut at \(cut)")
                XCTAssertNoThrow(try lookup([3, 1], in: prefix), "cut at \(cut)")
            } else {
                XCTAssertThrowsError(try readAll(prefix), "cut at \(cut)")
                XCTAssertThrowsError(try lookup([3, 1], in: prefix), "cut at \(cut)")
                errors += 1
            }
        }
        XCTAssertEqual(errors, bytes.count - (boundaries.count - 1))
    }

    func testRandomBuffersNeverCrash() {
        var rng = SplitMix64(seed: 0x5EED_F1EE_7E46)
        let sample = sampleMessage().bytes
        var parsed = 0
        var refused = 0
        for round in 0..<4000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = (0..<Int.random(in: 0...48, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            } else {
                // A valid message with a few bytes changed reaches deeper than pure noise.
                bytes = sample
                for _ in 0..<Int.random(in: 1...3, using: &rng) {
                    bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                }
            }
            bytes.withUnsafeBytes { buffer in
                var reader = ProtobufReader(buffer)
                var lastOffset = -1
                do {
                    while let field = try reader.next() {
                        XCTAssertTrue((1...ProtobufReader.maxFieldNumber).contains(field.number))
                        XCTAssertGreaterThan(field.offset, lastOffset)
                        lastOffset = field.offset
                        if case .lengthDelimited(let value) = field.value, let base = buffer.baseAddress, value.count > 0 {
                            let start = value.baseAddress! - base
                            XCTAssertEqual(start, field.valueOffset)
                            XCTAssertLessThanOrEqual(start + value.count, buffer.count)
                        }
                    }
                    parsed += 1
                } catch {
                    refused += 1
                }
                _ = try? ProtobufReader.lengthDelimitedField(at: [3, 1], in: buffer)
                _ = try? ProtobufReader.lengthDelimitedField(at: [1], in: buffer)
            }
        }
        // Both outcomes happen, so the loop exercises the success and the error paths.
        XCTAssertGreaterThan(parsed, 100)
        XCTAssertGreaterThan(refused, 100)
    }
}

/// A small seeded generator (SplitMix64), so a failing random input can be reproduced.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
