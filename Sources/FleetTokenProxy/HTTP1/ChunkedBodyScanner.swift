/// Follows a chunked body as it streams past, without copying, so a proxy can relay it byte for
/// byte and know where it ends; optionally reports the chunk data (for a client that wants the
/// decoded body).
///
/// RFC 9112 §7.1, strictly: every line ends in CRLF, chunk sizes are hex without whitespace
/// (BWS only before a `;` extension), extensions and trailer fields are checked for stray
/// control bytes but otherwise not interpreted. The size line and the trailer section are
/// bounded so a peer cannot make the scanner wait on an endless line.
package struct ChunkedBodyScanner: Sendable {
    private enum State: Sendable {
        case sizeDigits       // in the hex chunk-size (`digits` so far)
        case sizeWhitespace   // BWS after the size: only `;` may follow
        case chunkExtension   // after `;`, up to CR
        case sizeLF           // CR of the size line seen
        case data             // `chunkSize` bytes of data left
        case dataCR, dataLF   // the CRLF that must follow chunk data
        case trailerLineStart // start of a trailer field line, or of the final CRLF
        case trailerName, trailerValue, trailerLF
        case finalLF          // CR of the final empty line seen
        case finished
        case failed
    }

    private let maxChunkLineBytes: Int
    private let maxTrailerBytes: Int
    private var state = State.sizeDigits
    private var failure: ProxyFailure?
    /// The size being read in `.sizeDigits`, then the data left in `.data`.
    private var chunkSize = 0
    private var digits = 0
    private var lineBytes = 0
    private var trailerBytes = 0

    /// `maxChunkLineBytes` bounds one chunk-size line with its extensions (without CRLF);
    /// `maxTrailerBytes` bounds what follows the last chunk's size line: the trailer field
    /// lines and the final CRLF.
    package init(maxChunkLineBytes: Int = 4096, maxTrailerBytes: Int = 8192) {
        self.maxChunkLineBytes = maxChunkLineBytes
        self.maxTrailerBytes = maxTrailerBytes
    }

    /// The last chunk, trailers and final CRLF have all been seen.
    package var isFinished: Bool { state == .finished }

    /// Consumes a prefix of `bytes`. Returns how many bytes belong to the body (≤ bytes.count)
    /// and whether the body finished (last chunk, optional trailers, final CRLF); bytes after
    /// the end are the next message's. Calls `onData` for each piece of chunk data in order.
    /// Failures are `.malformedRequest`, or `.requestTooLarge` for an over-long size line or
    /// trailer section (a client reading an upstream maps them to its own failure); after one,
    /// every later call returns it again.
    package mutating func scan(
        _ bytes: UnsafeRawBufferPointer, onData: (UnsafeRawBufferPointer) -> Void = { _ in }
    ) -> Result<(consumed: Int, finished: Bool), ProxyFailure> {
        if let failure { return .failure(failure) }
        var index = 0
        while index < bytes.count && state != .finished {
            if state == .data {
                let take = min(chunkSize, bytes.count - index)
                onData(UnsafeRawBufferPointer(rebasing: bytes[index..<(index + take)]))
                index += take
                chunkSize -= take
                if chunkSize == 0 { state = .dataCR }
                continue
            }
            if let failure = step(bytes[index]) {
                state = .failed
                self.failure = failure
                return .failure(failure)
            }
            index += 1
        }
        return .success((consumed: index, finished: state == .finished))
    }

    /// Advances over one framing byte (anything but chunk data).
    private mutating func step(_ b: UInt8) -> ProxyFailure? {
        switch state {
        case .sizeDigits:
            if let value = Self.hexValue(b) {
                // Room for one more hex digit without overflowing Int.
                guard chunkSize >> (Int.bitWidth - 5) == 0 else { return malformed("chunk size overflows") }
                chunkSize = chunkSize << 4 | value
                digits += 1
            } else if digits == 0 {
                return b == ASCII.lf ? bareLF() : malformed("chunk size is not hexadecimal")
            } else if b == ASCII.semicolon {
                state = .chunkExtension
            } else if b == ASCII.sp || b == ASCII.htab {
                state = .sizeWhitespace
            } else if b == ASCII.cr {
                state = .sizeLF
                return nil
            } else if b == ASCII.lf {
                return bareLF()
            } else {
                return malformed("chunk size is not hexadecimal")
            }
            return countLineByte()
        case .sizeWhitespace:
            if b == ASCII.semicolon {
                state = .chunkExtension
            } else if b != ASCII.sp && b != ASCII.htab {
                return malformed("whitespace after chunk size without an extension")
            }
            return countLineByte()
        case .chunkExtension:
            if b == ASCII.cr {
                state = .sizeLF
                return nil
            }
            if b == ASCII.lf { return bareLF() }
            guard ASCII.isFieldValueByte(b) else { return malformed("control byte \(ASCII.hex(b)) in chunk extension") }
            return countLineByte()
        case .sizeLF:
            guard b == ASCII.lf else { return malformed("bare CR in chunk size line") }
            state = chunkSize == 0 ? .trailerLineStart : .data
            digits = 0
            lineBytes = 0
            return nil
        case .dataCR:
            guard b == ASCII.cr else { return malformed("chunk data not followed by CRLF") }
            state = .dataLF
            return nil
        case .dataLF:
            guard b == ASCII.lf else { return malformed("chunk data not followed by CRLF") }
            state = .sizeDigits
            return nil
        case .trailerLineStart:
            if b == ASCII.cr {
                state = .finalLF
            } else if ASCII.isTokenByte(b) {
                state = .trailerName
            } else if b == ASCII.sp || b == ASCII.htab {
                return malformed("line folding in trailer section")
            } else if b == ASCII.lf {
                return bareLF()
            } else {
                return malformed("invalid byte \(ASCII.hex(b)) at start of trailer field")
            }
            return countTrailerByte()
        case .trailerName:
            if b == ASCII.colon {
                state = .trailerValue
            } else if !ASCII.isTokenByte(b) {
                if b == ASCII.sp || b == ASCII.htab { return malformed("whitespace before colon in trailer field") }
                if b == ASCII.lf { return bareLF() }
                return malformed("invalid byte \(ASCII.hex(b)) in trailer field name")
            }
            return countTrailerByte()
        case .trailerValue:
            if b == ASCII.cr {
                state = .trailerLF
            } else if b == ASCII.lf {
                return bareLF()
            } else if !ASCII.isFieldValueByte(b) {
                return malformed("control byte \(ASCII.hex(b)) in trailer field value")
            }
            return countTrailerByte()
        case .trailerLF:
            guard b == ASCII.lf else { return malformed("bare CR in trailer section") }
            state = .trailerLineStart
            return countTrailerByte()
        case .finalLF:
            guard b == ASCII.lf else { return malformed("bare CR at end of chunked body") }
            state = .finished
            return countTrailerByte()
        case .data, .finished, .failed:
            // `scan` handles these without calling `step`.
            return nil
        }
    }

    private mutating func countLineByte() -> ProxyFailure? {
        lineBytes += 1
        guard lineBytes <= maxChunkLineBytes else {
            return .requestTooLarge("chunk size line over \(maxChunkLineBytes) bytes")
        }
        return nil
    }

    private mutating func countTrailerByte() -> ProxyFailure? {
        trailerBytes += 1
        guard trailerBytes <= maxTrailerBytes else {
            return .requestTooLarge("chunked trailer section over \(maxTrailerBytes) bytes")
        }
        return nil
    }

    private func malformed(_ message: String) -> ProxyFailure { .malformedRequest(message) }

    private func bareLF() -> ProxyFailure { .malformedRequest("bare LF (line not ended by CRLF) in chunked body") }

    @inline(__always)
    private static func hexValue(_ b: UInt8) -> Int? {
        switch b {
        case 0x30...0x39: return Int(b - 0x30)
        case 0x41...0x46: return Int(b - 0x41 + 10)
        case 0x61...0x66: return Int(b - 0x61 + 10)
        default: return nil
        }
    }
}
