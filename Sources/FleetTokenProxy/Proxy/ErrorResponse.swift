/// The sidecar's own answers to calls it refuses, in the form Google's REST clients parse
/// (`{"error":{"code","message","status"}}`, docs/CONTRACT.md §5).
enum ErrorResponse {
    static func jsonBody(_ failure: ProxyFailure) -> [UInt8] {
        let body = "{\"error\":{\"code\":\(failure.httpStatus),\"message\":\"\(jsonEscaped(failure.message))\",\"status\":\"\(failure.statusName)\"}}\n"
        return Array(body.utf8)
    }

    /// A complete HTTP/1.1 response.
    static func http1(_ failure: ProxyFailure, close: Bool) -> [UInt8] {
        let body = jsonBody(failure)
        var head = "HTTP/1.1 \(failure.httpStatus) \(HTTPStatus.reasonPhrase(failure.httpStatus))\r\n"
        head += "Content-Type: application/json; charset=UTF-8\r\n"
        head += "Content-Length: \(body.count)\r\n"
        if close { head += "Connection: close\r\n" }
        head += "\r\n"
        return Array(head.utf8) + body
    }

    /// JSON string escaping for messages (which may quote a client-supplied id).
    static func jsonEscaped(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }
}
