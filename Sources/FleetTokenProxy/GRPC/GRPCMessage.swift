/// gRPC's `grpc-message` value: percent-encoded UTF-8 (gRPC over HTTP/2 spec).
enum GRPCMessage {
    static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            if byte >= 0x20 && byte <= 0x7E && byte != 0x25 {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                out += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return out
    }
}
