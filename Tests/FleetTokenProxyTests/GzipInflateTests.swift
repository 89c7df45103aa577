import CZlib
import XCTest
@testable import FleetTokenProxy

final class GzipInflateTests: XCTestCase {
    private func gzip(_ data: [UInt8], level: Int32 = Z_DEFAULT_COMPRESSION) -> [UInt8] {
        TestGzip.compress(data, level: level)
    }

    private func inflate(_ bytes: [UInt8], maxOutput: Int = GzipInflate.defaultMaxOutput) -> Result<[UInt8], ProxyFailure> {
        bytes.withUnsafeBytes { GzipInflate.inflate($0, maxOutput: maxOutput) }
    }

    private func assertMalformed(_ bytes: [UInt8], _ expected: String, file: StaticString = #filePath, line: UInt = #line) {
        guard case .failure(.malformedRequest(let message)) = inflate(bytes) else {
            return XCTFail("expected malformedRequest, got \(inflate(bytes))", file: file, line: line)
        }
        XCTAssertTrue(message.contains(expected), message, file: file, line: line)
    }

    private func sampleMessage() -> [UInt8] {
        ProtobufTestEncoder.message {
            $0.messageField(1) { $0.stringField(1, "en-US") }
            $0.stringField(3, "providers/my-project/vehicles/v-1")
            $0.messageField(4) { for i in 0..<200 { $0.stringField(8, "attribute-\(i % 7)") } }
        }
    }

    func testGzipRoundTripGivesTheOriginalBytes() {
        let message = sampleMessage()
        let compressed = gzip(message)
        XCTAssertLessThan(compressed.count, message.count)
        XCTAssertEqual(try inflate(compressed).get(), message)
    }

    func testUncompressibleDataRoundTrips() {
        var rng = SplitMix64(seed: 42)
        let noise = (0..<100_000).map { _ in UInt8.random(in: 0...255, using: &rng) }
        XCTAssertEqual(try inflate(gzip(noise, level: Z_NO_COMPRESSION)).get(), noise)
        XCTAssertEqual(try inflate(gzip(noise)).get(), noise)
    }

    func testEmptyMessageRoundTrips() {
        XCTAssertEqual(try inflate(gzip([])).get(), [])
    }

    func testConcatenatedGzipMembersAreReadInTurn() {
        XCTAssertEqual(try inflate(gzip([1, 2, 3]) + gzip([4, 5])).get(), [1, 2, 3, 4, 5])
    }

    func testZipBombIsRefused() {
        // 16 MiB of zeros deflate to about 16 KB.
        let bomb = gzip([UInt8](repeating: 0, count: 16 << 20), level: Z_BEST_COMPRESSION)
        XCTAssertLessThan(bomb.count, 20_000)
        guard case .failure(let failure) = inflate(bomb), case .requestTooLarge(let message) = failure else {
            return XCTFail("a zip bomb was inflated")
        }
        XCTAssertTrue(message.contains("\(GzipInflate.defaultMaxOutput)"), message)
        XCTAssertEqual(failure.grpcStatus, 8)
    }

    func testOutputExactlyAtTheLimitPassesAndOneByteMoreIsRefused() {
        let limit = 10_000
        XCTAssertEqual(try inflate(gzip([UInt8](repeating: 7, count: limit)), maxOutput: limit).get().count, limit)
        guard case .failure(.requestTooLarge) = inflate(gzip([UInt8](repeating: 7, count: limit + 1)), maxOutput: limit) else {
            return XCTFail("output over the limit accepted")
        }
        // A bomb hidden in a second member is refused too.
        guard case .failure(.requestTooLarge) = inflate(gzip([1]) + gzip([UInt8](repeating: 0, count: limit)), maxOutput: limit) else {
            return XCTFail("second member over the limit accepted")
        }
    }

    func testGarbageIsRefused() {
        assertMalformed(Array("this is not gzip at all".utf8), "does not inflate")
        assertMalformed([], "truncated")
    }

    func testZlibStreamWithoutGzipHeaderIsRefused() {
        // 0x78 0x9C: a zlib (RFC 1950) header, which grpc-encoding: gzip does not allow.
        assertMalformed([0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01], "does not inflate")
    }

    func testTruncatedGzipIsRefused() {
        let compressed = gzip(sampleMessage())
        for cut in [1, 10, compressed.count / 2, compressed.count - 1] {
            guard case .failure(.malformedRequest) = inflate(Array(compressed.prefix(cut))) else {
                return XCTFail("cut at \(cut) of \(compressed.count) accepted")
            }
        }
    }

    func testCorruptChecksumIsRefused() {
        var compressed = gzip(sampleMessage())
        compressed[compressed.count - 6] ^= 0xFF   // inside the CRC-32 trailer
        assertMalformed(compressed, "incorrect data check")
    }

    func testTrailingGarbageAfterTheStreamIsRefused() {
        assertMalformed(gzip([1, 2, 3]) + [0, 0, 0, 0], "does not inflate")
    }
}

/// Test-side gzip, with zlib's own deflate: what a gRPC client's gzip compressor sends.
enum TestGzip {
    static func compress(_ data: [UInt8], level: Int32 = Z_DEFAULT_COMPRESSION) -> [UInt8] {
        // zlib checks that the z_stream stays at one address between calls.
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        defer { stream.deallocate() }
        XCTAssertEqual(deflateInit2_(stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY,
                                     ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)), Z_OK)
        defer { deflateEnd(stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(stream, uLong(data.count))))
        var input = data
        let status = input.withUnsafeMutableBufferPointer { inBuffer in
            output.withUnsafeMutableBufferPointer { outBuffer in
                stream.pointee.next_in = inBuffer.baseAddress
                stream.pointee.avail_in = uInt(inBuffer.count)
                stream.pointee.next_out = outBuffer.baseAddress
                stream.pointee.avail_out = uInt(outBuffer.count)
                return deflate(stream, Z_FINISH)
            }
        }
        XCTAssertEqual(status, Z_STREAM_END)
        return Array(output.prefix(Int(stream.pointee.total_out)))
    }
}
