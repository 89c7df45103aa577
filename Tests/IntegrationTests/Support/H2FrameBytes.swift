/// HTTP/2 frames as raw bytes (RFC 9113 §4.1), for peers that write what no HTTP/2 library
/// would: the faults of `H2Fault`, a client's malformed frame.
enum H2FrameBytes {
    /// The client connection preface (§3.4).
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    static func frame(type: UInt8, flags: UInt8, stream: Int32, payload: [UInt8]) -> [UInt8] {
        let length = payload.count
        return [UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff), type, flags]
            + word(UInt32(stream) & 0x7fff_ffff) + payload
    }

    static func goAway(lastStreamID: Int32, errorCode: UInt32) -> [UInt8] {
        frame(type: 7, flags: 0, stream: 0, payload: word(UInt32(lastStreamID)) + word(errorCode))
    }

    /// A header block of literal fields without indexing, new names (RFC 7541 §6.2.2): no
    /// Huffman, no table, each name and value under 127 bytes.
    static func literalHeaderBlock(_ fields: [(String, String)]) -> [UInt8] {
        var block: [UInt8] = []
        for (name, value) in fields {
            block += [0, UInt8(name.utf8.count)]
            block += Array(name.utf8)
            block.append(UInt8(value.utf8.count))
            block += Array(value.utf8)
        }
        return block
    }

    /// Splits `bytes` into frames: (type, flags, stream, payload); a partial last frame is left out.
    static func frames(in bytes: [UInt8]) -> [(type: UInt8, flags: UInt8, stream: Int32, payload: [UInt8])] {
        var frames: [(UInt8, UInt8, Int32, [UInt8])] = []
        var i = 0
        while bytes.count - i >= 9 {
            let length = Int(bytes[i]) << 16 | Int(bytes[i + 1]) << 8 | Int(bytes[i + 2])
            guard bytes.count - i - 9 >= length else { break }
            let stream = Int32(bitPattern: word(in: bytes, at: i + 5) & 0x7fff_ffff)
            frames.append((bytes[i + 3], bytes[i + 4], stream, Array(bytes[(i + 9)..<(i + 9 + length)])))
            i += 9 + length
        }
        return frames
    }

    static func word(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24 & 0xff), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
    }

    /// The big-endian 32-bit word at `offset`.
    static func word(in bytes: [UInt8], at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }
}
