import FleetTokenProxy

/// `ChunkedBodyScanner`: however the bytes are split into reads, the body ends at the same
/// byte with the same decoded data (one decoded length), or fails; it ends on a CRLF and not a
/// byte earlier; until it ends every byte given belongs to it; a failure stays a failure.
public enum ChunkedBodyInvariant: ParserInvariant {
    public static let name = "chunked-body"

    struct Outcome: Equatable {
        var consumed = 0
        var finished = false
        var failed = false
        var data: [UInt8] = []
    }

    public static func check(_ input: UnsafeRawBufferPointer) throws(InvariantViolation) {
        let whole = try scan(input, pieces: [input.count])
        let oneByOne = try scan(input, pieces: Array(repeating: 1, count: input.count))
        try expect(whole == oneByOne, "one read and byte-by-byte reads disagree")
        let uneven = try scan(input, pieces: unevenPieces(input))
        try expect(whole == uneven, "one read and uneven reads disagree")

        if whole.finished {
            try expect(whole.consumed >= 5 && input[(whole.consumed - 2)..<whole.consumed].elementsEqual([13, 10]),
                       "body ends at byte \(whole.consumed), not after a CRLF")
            let short = try scan(UnsafeRawBufferPointer(rebasing: input[..<(whole.consumed - 1)]), pieces: [whole.consumed - 1])
            try expect(!short.finished && !short.failed, "one byte short of its end the body is finished or failed")
        } else if !whole.failed {
            try expect(whole.consumed == input.count, "an unfinished body left bytes unread")
        }
    }

    /// Feeds `input` to one scanner in reads of the given sizes, as a connection would.
    static func scan(_ input: UnsafeRawBufferPointer, pieces: [Int]) throws(InvariantViolation) -> Outcome {
        var scanner = ChunkedBodyScanner(maxChunkLineBytes: 64, maxTrailerBytes: 256)
        var outcome = Outcome()
        var start = 0
        for size in pieces where !outcome.finished && !outcome.failed {
            let piece = UnsafeRawBufferPointer(rebasing: input[start..<(start + size)])
            switch scanner.scan(piece, onData: { outcome.data.append(contentsOf: $0) }) {
            case .success(let step):
                try expect(step.consumed <= size, "consumed \(step.consumed) of a \(size)-byte read")
                try expect(step.finished == scanner.isFinished, "finished and isFinished disagree")
                try expect(step.finished || step.consumed == size, "stopped early without finishing")
                outcome.consumed += step.consumed
                outcome.finished = step.finished
            case .failure:
                outcome.failed = true
                var again = [UInt8(ascii: "0")]
                let stillFailed = again.withUnsafeMutableBytes { bytes in
                    if case .failure = scanner.scan(UnsafeRawBufferPointer(bytes)) { return true }
                    return false
                }
                try expect(stillFailed, "a failed scanner accepts more bytes")
            }
            start += size
        }
        // Which byte a failure is noticed at depends on nothing but the bytes; what was
        // consumed before it does depend on the reads, so it is not compared.
        if outcome.failed { outcome.consumed = 0 }
        return outcome
    }

    /// Read sizes of 1 to 16 bytes, chosen by the input itself so a finding replays the same way.
    static func unevenPieces(_ input: UnsafeRawBufferPointer) -> [Int] {
        var pieces: [Int] = []
        var left = input.count
        var state = UInt32(truncatingIfNeeded: input.count) &* 2_654_435_761
        for b in input.prefix(8) { state = (state ^ UInt32(b)) &* 16_777_619 }
        while left > 0 {
            state = state &* 1_103_515_245 &+ 12345
            let size = min(left, Int(state >> 16) % 16 + 1)
            pieces.append(size)
            left -= size
        }
        return pieces
    }
}
