import FleetTokenProxy
import Foundation

// The sidecar's HTTP/1.1 request parser as a filter, for the differential test against llhttp
// (Tests/grpc/test_http1_llhttp_differential.py). Reads records from stdin (4-byte big-endian
// length, then that many bytes: one client connection's first bytes) and writes one JSON line
// each: how `HTTP1Parser.parseRequest` reads the head, with the sidecar's own bounds, and how
// much body the framing it chose gives (`ChunkedBodyScanner` for chunked bodies).

/// The bounds `ServerLimits` gives a sidecar by default (README, Security model).
let maxHeadBytes = 32 * 1024
let maxHeaderCount = 100

func describe(_ input: UnsafeRawBufferPointer) -> [String: Any] {
    switch HTTP1Parser.parseRequest(input, maxHeadBytes: maxHeadBytes, maxHeaderCount: maxHeaderCount) {
    case .incomplete:
        return ["result": "incomplete"]
    case .invalid(let failure):
        return ["result": "invalid", "reason": "\(failure)"]
    case .complete(let head, let headLength):
        var out: [String: Any] = [
            "result": "complete", "method": head.method, "target": head.target, "minor": head.minorVersion,
            "keepAlive": head.keepAlive, "headLength": headLength,
            "headers": head.headers.fields.map { [$0.name, $0.value] },
        ]
        let rest = UnsafeRawBufferPointer(rebasing: input[headLength...])
        switch head.framing {
        case .none, .untilClose:
            out["framing"] = "none"
            out["body"] = ["complete": true, "length": 0, "end": headLength]
        case .contentLength(let n):
            out["framing"] = "length"
            out["body"] = ["complete": rest.count >= n, "length": n, "end": headLength + min(n, rest.count)]
        case .chunked:
            out["framing"] = "chunked"
            var scanner = ChunkedBodyScanner()
            var decoded = 0
            switch scanner.scan(rest, onData: { decoded += $0.count }) {
            case .success(let step):
                out["body"] = ["complete": step.finished, "length": decoded, "end": headLength + step.consumed]
            case .failure(let failure):
                out["body"] = ["complete": false, "length": decoded, "error": "\(failure)"]
            }
        }
        return out
    }
}

let input = FileHandle.standardInput.readDataToEndOfFile()
var offset = 0
var output = Data()
while offset + 4 <= input.count {
    let length = input[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
    offset += 4
    let record = input[offset..<min(offset + length, input.count)]
    offset += length
    let described = Data(record).withUnsafeBytes { describe($0) }
    output.append(try JSONSerialization.data(withJSONObject: described, options: [.sortedKeys]))
    output.append(0x0A)
}
FileHandle.standardOutput.write(output)
