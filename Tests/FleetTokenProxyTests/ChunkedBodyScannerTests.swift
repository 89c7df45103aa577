@testable import FleetTokenProxy
import XCTest

final class ChunkedBodyScannerTests: XCTestCase {
    private let body = "4\r\nWiki\r\n7\r\npedia i\r\nB\r\nn \r\nchunks.\r\n0\r\n\r\n"

    func testWholeBodyReportsTheDataAndEndsRightAfterTheFinalCRLF() {
        let outcome = scan([body + "GET / HTTP/1.1\r\n"])
        XCTAssertNil(outcome.failure)
        XCTAssertEqual(outcome.data, "Wikipedia in \r\nchunks.")
        XCTAssertEqual(outcome.consumed, body.utf8.count)
        XCTAssertTrue(outcome.finished)
    }

    func testOneByteAtATimeGivesTheSameDataAndLengthAsWhole() {
        let input = Array((body + "next").utf8)
        let whole = scan([input])
        let bytewise = scan(input.map { [$0] })
        XCTAssertNil(bytewise.failure)
        XCTAssertEqual(bytewise.data, whole.data)
        XCTAssertEqual(bytewise.consumed, whole.consumed)
        XCTAssertTrue(bytewise.finished)
        XCTAssertEqual(bytewise.finishedAfterFragment, body.utf8.count - 1, "finished on the final LF, not later")
    }

    func testEverySplitIntoTwoFragmentsGivesTheSameResult() {
        let input = Array("1a;x=y\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nT: v\r\n\r\n".utf8)
        let whole = scan([input])
        XCTAssertTrue(whole.finished)
        for split in 0...input.count {
            let outcome = scan([Array(input[..<split]), Array(input[split...])])
            XCTAssertEqual(outcome.data, whole.data, "split at \(split)")
            XCTAssertEqual(outcome.consumed, whole.consumed, "split at \(split)")
            XCTAssertTrue(outcome.finished, "split at \(split)")
        }
    }

    func testChunkExtensionsAreSkippedAndNotReportedAsData() {
        let outcome = scan(["4;name=value\r\nWiki\r\n5 ; q=\"a b;c\"\t; flag\r\npedia\r\n0;last\r\n\r\n"])
        XCTAssertNil(outcome.failure)
        XCTAssertEqual(outcome.data, "Wikipedia")
        XCTAssertTrue(outcome.finished)
    }

    func testLeadingZerosAndBothHexCasesAreAccepted() {
        let data = String(repeating: "x", count: 0x1A)
        let outcome = scan(["0001a\r\n\(data)\r\n1A\r\n\(data)\r\n000\r\n\r\n"])
        XCTAssertNil(outcome.failure)
        XCTAssertEqual(outcome.data.utf8.count, 2 * 0x1A)
        XCTAssertTrue(outcome.finished)
    }

    func testTrailerFieldsArePartOfTheBody() {
        let chunked = "3\r\nabc\r\n0\r\nX-Checksum: 900150983cd24fb0\r\nServer-Timing: db;dur=53\r\n\r\n"
        let outcome = scan([chunked + "tail"])
        XCTAssertNil(outcome.failure)
        XCTAssertEqual(outcome.data, "abc")
        XCTAssertEqual(outcome.consumed, chunked.utf8.count)
        XCTAssertTrue(outcome.finished)
    }

    func testTrailerSectionOverTheLimitIsRequestTooLarge() {
        var scanner = ChunkedBodyScanner(maxTrailerBytes: 32)
        let fits = scan(["0\r\nX: \(String(repeating: "a", count: 25))\r\n\r\n"], with: &scanner)
        XCTAssertTrue(fits.finished, "32 bytes of trailer section fit a 32-byte limit")

        scanner = ChunkedBodyScanner(maxTrailerBytes: 32)
        let over = scan(["0\r\nX: \(String(repeating: "a", count: 26))\r\n\r\n"], with: &scanner)
        guard case .requestTooLarge? = over.failure else { return XCTFail("got \(String(describing: over.failure))") }
    }

    func testMalformedTrailerFieldsAreRejected() {
        for trailer in ["NoColon\r\n", "X : v\r\n", " folded\r\n", "X: a\u{01}\r\n", "X: v\n"] {
            let outcome = scan(["0\r\n\(trailer)\r\n"])
            guard case .malformedRequest? = outcome.failure else {
                return XCTFail("trailer \(trailer.debugDescription) gave \(outcome)")
            }
        }
    }

    func testChunkSizeThatIsNotHexIsRejected() {
        for line in ["g", "4x", "-1", "0x4", "", " 4", "+4"] {
            let outcome = scan(["\(line)\r\nabcd\r\n0\r\n\r\n"])
            guard case .malformedRequest(let message)? = outcome.failure else {
                return XCTFail("size line \(line.debugDescription) gave \(outcome)")
            }
            XCTAssertTrue(message.contains("hexadecimal"), message)
        }
    }

    func testChunkSizeOverflowIsRejectedButIntMaxIsNot() {
        let largest = scan(["7FFFFFFFFFFFFFFF\r\nabc"])
        XCTAssertNil(largest.failure)
        XCTAssertEqual(largest.data, "abc")
        XCTAssertFalse(largest.finished)

        for line in ["8000000000000000", "10000000000000000", "FFFFFFFFFFFFFFFFFFFF"] {
            guard case .malformedRequest(let message)? = scan(["\(line)\r\n"]).failure else {
                return XCTFail("\(line) was accepted")
            }
            XCTAssertTrue(message.contains("overflow"), message)
        }
    }

    func testOversizedChunkSizeLineIsRequestTooLargeBeforeItEnds() {
        let line = Array("4;\(String(repeating: "e", count: 100))".utf8)
        var scanner = ChunkedBodyScanner(maxChunkLineBytes: 64)
        var failedAt: Int?
        for (offset, byte) in line.enumerated() {
            let result = [byte].withUnsafeBytes { scanner.scan($0) }
            if case .failure(.requestTooLarge) = result {
                failedAt = offset
                break
            }
        }
        XCTAssertEqual(failedAt, 64, "the 65th byte of the line is refused without waiting for its CRLF")

        var roomy = ChunkedBodyScanner(maxChunkLineBytes: 64)
        XCTAssertNil(scan(["4;\(String(repeating: "e", count: 62))\r\nWiki\r\n0\r\n\r\n"], with: &roomy).failure)
    }

    func testChunkDataNotFollowedByCRLFIsRejected() {
        let inputs = ["4\r\nWikiX\r\n0\r\n\r\n", "4\r\nWikiX\n0\r\n\r\n", "4\r\nWiki\rX0\r\n\r\n",
                      "4\r\nWiki\n0\r\n\r\n", "4\r\nWiki\n\n0\r\n\r\n"]
        for input in inputs {
            guard case .malformedRequest(let message)? = scan([input]).failure else {
                return XCTFail("\(input.debugDescription) accepted")
            }
            XCTAssertTrue(message.contains("CRLF"), message)
        }
    }

    func testBareLFOrCRInTheSizeLineIsRejected() {
        for input in ["4\nWiki\r\n0\r\n\r\n", "4;a=b\nWiki\r\n0\r\n\r\n", "4\rWiki\r\n0\r\n\r\n", "0\r\n\n"] {
            guard case .malformedRequest? = scan([input]).failure else {
                return XCTFail("\(input.debugDescription) accepted")
            }
        }
    }

    func testWhitespaceAfterChunkSizeWithoutAnExtensionIsRejected() {
        guard case .malformedRequest(let message)? = scan(["4 \r\nWiki\r\n0\r\n\r\n"]).failure else {
            return XCTFail("\"4 \" accepted as a size line")
        }
        XCTAssertTrue(message.contains("whitespace"), message)
    }

    func testControlByteInChunkExtensionIsRejected() {
        guard case .malformedRequest? = scan(["4;a=\u{00}\r\nWiki\r\n0\r\n\r\n"]).failure else {
            return XCTFail("NUL in a chunk extension accepted")
        }
    }

    func testAfterTheEndNothingMoreIsConsumed() {
        var scanner = ChunkedBodyScanner()
        XCTAssertTrue(scan(["0\r\n\r\n"], with: &scanner).finished)
        XCTAssertTrue(scanner.isFinished)
        let again = Array("5\r\nhello\r\n".utf8).withUnsafeBytes { scanner.scan($0) }
        guard case .success(let step) = again else { return XCTFail("\(again)") }
        XCTAssertEqual(step.consumed, 0)
        XCTAssertTrue(step.finished)
    }

    func testAFailureIsRepeatedOnLaterCalls() {
        var scanner = ChunkedBodyScanner()
        XCTAssertNotNil(scan(["zz\r\n"], with: &scanner).failure)
        let later = Array("0\r\n\r\n".utf8).withUnsafeBytes { scanner.scan($0) }
        guard case .failure(.malformedRequest) = later else { return XCTFail("\(later)") }
        XCTAssertFalse(scanner.isFinished)
    }

    func testUnfinishedBodyConsumesEverythingAndIsNotFinished() {
        var scanner = ChunkedBodyScanner()
        let outcome = scan(["A\r\n01234"], with: &scanner)
        XCTAssertNil(outcome.failure)
        XCTAssertEqual(outcome.consumed, 8)
        XCTAssertFalse(outcome.finished)
        XCTAssertFalse(scanner.isFinished)
    }

    // MARK: - Helpers

    private struct Outcome {
        var data = ""
        var consumed = 0
        var finished = false
        /// Index of the fragment during which the body finished.
        var finishedAfterFragment: Int?
        var failure: ProxyFailure?
    }

    private func scan(_ fragments: [String]) -> Outcome {
        var scanner = ChunkedBodyScanner()
        return scan(fragments.map { Array($0.utf8) }, with: &scanner)
    }

    private func scan(_ fragments: [[UInt8]]) -> Outcome {
        var scanner = ChunkedBodyScanner()
        return scan(fragments, with: &scanner)
    }

    private func scan(_ fragments: [String], with scanner: inout ChunkedBodyScanner) -> Outcome {
        scan(fragments.map { Array($0.utf8) }, with: &scanner)
    }

    /// Feeds fragments in order as a proxy would, stopping at the end of the body or a failure.
    private func scan(_ fragments: [[UInt8]], with scanner: inout ChunkedBodyScanner) -> Outcome {
        var outcome = Outcome()
        var data: [UInt8] = []
        for (index, fragment) in fragments.enumerated() {
            let result = fragment.withUnsafeBytes { bytes in
                scanner.scan(bytes) { data.append(contentsOf: $0) }
            }
            switch result {
            case .success(let step):
                outcome.consumed += step.consumed
                if step.finished {
                    outcome.finished = true
                    outcome.finishedAfterFragment = index
                }
            case .failure(let failure):
                outcome.failure = failure
            }
            if outcome.finished || outcome.failure != nil { break }
        }
        outcome.data = String(decoding: data, as: UTF8.self)
        return outcome
    }
}
