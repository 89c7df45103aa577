import XCTest
@testable import FleetTokenProxy

final class GRPCMessageFrameTests: XCTestCase {
    private func scan(_ bytes: [UInt8], maxLength: Int = GRPCMessageFrame.defaultMaxMessageLength) -> GRPCMessageFrame.FirstMessage {
        bytes.withUnsafeBytes { GRPCMessageFrame.firstMessage(in: $0, maxLength: maxLength) }
    }

    private func header(flag: UInt8 = 0, length: UInt32) -> [UInt8] {
        [flag, UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
    }

    func testIncompleteHeaderNeedsFiveBytes() {
        for count in 0..<5 {
            XCTAssertEqual(scan(Array(header(length: 3).prefix(count))), .needMore(total: 5), "\(count) bytes")
        }
    }

    func testIncompletePayloadNeedsTheRestOfTheMessage() {
        XCTAssertEqual(scan(header(length: 10) + [1, 2, 3]), .needMore(total: 15))
        XCTAssertEqual(scan(header(length: 10) + Array(repeating: 0, count: 9)), .needMore(total: 15))
    }

    func testCompleteMessageGivesItsPayloadRange() {
        XCTAssertEqual(scan(header(length: 3) + [7, 8, 9]), .complete(compressed: false, payload: 5..<8))
    }

    func testBytesOfLaterMessagesAreNotPartOfTheFirst() {
        let bytes = header(length: 2) + [1, 2] + header(length: 100) + [3]
        XCTAssertEqual(scan(bytes), .complete(compressed: false, payload: 5..<7))
    }

    func testEmptyMessageIsComplete() {
        XCTAssertEqual(scan(header(length: 0)), .complete(compressed: false, payload: 5..<5))
    }

    func testCompressedFlagIsReported() {
        XCTAssertEqual(scan(header(flag: 1, length: 1) + [0x1F]), .complete(compressed: true, payload: 5..<6))
    }

    func testUnknownFlagIsMalformedAsSoonAsItArrives() {
        for flag: UInt8 in [2, 0x80, 0xFF] {
            guard case .invalid(.malformedRequest(let message)) = scan([flag]) else {
                return XCTFail("flag \(flag): \(scan([flag]))")
            }
            XCTAssertTrue(message.contains("compressed-flag \(flag)"), message)
            XCTAssertEqual(scan(header(flag: flag, length: 0)), scan([flag]))
        }
    }

    func testMessageOverFourMiBIsRefusedFromItsHeader() {
        let limit = UInt32(GRPCMessageFrame.defaultMaxMessageLength)
        XCTAssertEqual(GRPCMessageFrame.defaultMaxMessageLength, 4 * 1024 * 1024)
        XCTAssertEqual(scan(header(length: limit)), .needMore(total: Int(limit) + 5))
        for length in [limit + 1, UInt32.max] {
            guard case .invalid(let failure) = scan(header(length: length)), case .requestTooLarge = failure else {
                return XCTFail("length \(length): \(scan(header(length: length)))")
            }
            XCTAssertEqual(failure.grpcStatus, 8)
        }
    }

    func testSmallerLimitIsHonoured() {
        XCTAssertEqual(scan(header(length: 16) + Array(repeating: 0, count: 16), maxLength: 16),
                       .complete(compressed: false, payload: 5..<21))
        guard case .invalid(.requestTooLarge) = scan(header(length: 17), maxLength: 16) else {
            return XCTFail("17 bytes over a 16-byte limit accepted")
        }
    }
}
