import CZlib

/// Inflates a gRPC message sent with `grpc-encoding: gzip`, so the sidecar can read which
/// entity it is about. The message itself is still forwarded as sent.
///
/// The output is bounded: a few kilobytes of gzip can inflate to gigabytes, so inflating
/// stops, and the call is refused, as soon as it passes `maxOutput`.
package enum GzipInflate {
    /// The same bound as a plain first message (`GRPCMessageFrame.defaultMaxMessageLength`).
    static let defaultMaxOutput = GRPCMessageFrame.defaultMaxMessageLength

    /// The inflated bytes of `input`, a gzip stream (RFC 1952; several members are read one
    /// after another, as gzip readers do). Errors: `.requestTooLarge` past `maxOutput`,
    /// `.malformedRequest` for anything that is not complete, valid gzip.
    package static func inflate(
        _ input: UnsafeRawBufferPointer, maxOutput: Int = defaultMaxOutput
    ) -> Result<[UInt8], ProxyFailure> {
        guard input.count <= Int(UInt32.max) else {
            return .failure(.requestTooLarge("gzip request message of \(input.count) bytes is too large to inflate"))
        }
        let maxOutput = max(maxOutput, 0)

        // zlib keeps a pointer back to the z_stream in its state and checks it on every call,
        // so the stream lives at one fixed address, not in a Swift variable that may move.
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        defer {
            stream.deinitialize(count: 1)
            stream.deallocate()
        }
        // windowBits 15 + 16: gzip wrapper only (a bare zlib or raw deflate stream is not gzip).
        let initStatus = inflateInit2_(stream, 15 + 16, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        guard initStatus == Z_OK else {
            return .failure(.malformedRequest("cannot start inflating a gzip message: \(zlibText(initStatus, stream))"))
        }
        defer { inflateEnd(stream) }

        stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = uInt(input.count)

        // One byte more than allowed: producing it is how an oversized message is noticed.
        let capacity = maxOutput + 1
        var output = UnsafeMutableRawBufferPointer.allocate(
            byteCount: min(capacity, max(input.count * 4, 4096)), alignment: 1)
        defer { output.deallocate() }
        var produced = 0
        while true {
            if produced == output.count {
                guard output.count < capacity else { return .failure(tooLarge(maxOutput)) }
                let grown = UnsafeMutableRawBufferPointer.allocate(
                    byteCount: output.count + min(output.count, capacity - output.count), alignment: 1)
                grown.copyMemory(from: UnsafeRawBufferPointer(output))
                output.deallocate()
                output = grown
            }
            stream.pointee.next_out = output.baseAddress!.assumingMemoryBound(to: Bytef.self) + produced
            stream.pointee.avail_out = uInt(output.count - produced)
            let status = CZlib.inflate(stream, Z_NO_FLUSH)
            produced = output.count - Int(stream.pointee.avail_out)
            switch status {
            case Z_STREAM_END:
                if produced > maxOutput { return .failure(tooLarge(maxOutput)) }
                if stream.pointee.avail_in == 0 {
                    return .success([UInt8](UnsafeRawBufferPointer(rebasing: output[..<produced])))
                }
                // Another gzip member follows; anything else fails its header check.
                inflateReset(stream)
            case Z_OK:
                continue
            case Z_BUF_ERROR where stream.pointee.avail_in == 0:
                return .failure(.malformedRequest("gzip request message is truncated"))
            case Z_BUF_ERROR:
                continue // out of output space: grown at the top of the loop
            default:
                return .failure(.malformedRequest("gzip request message does not inflate: \(zlibText(status, stream))"))
            }
        }
    }

    private static func tooLarge(_ maxOutput: Int) -> ProxyFailure {
        .requestTooLarge("gzip request message inflates to more than the \(maxOutput) bytes the sidecar reads to route a call")
    }

    /// zlib's own message for a failure, falling back to its status name.
    private static func zlibText(_ status: Int32, _ stream: UnsafeMutablePointer<z_stream>) -> String {
        if let message = stream.pointee.msg { return String(cString: message) }
        switch status {
        case Z_NEED_DICT: return "needs a preset dictionary"
        case Z_DATA_ERROR: return "data error"
        case Z_MEM_ERROR: return "out of memory"
        case Z_STREAM_ERROR: return "stream error"
        case Z_VERSION_ERROR: return "zlib version mismatch"
        default: return "zlib status \(status)"
        }
    }
}
