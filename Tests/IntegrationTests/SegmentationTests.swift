@testable import FleetTokenProxy
import Foundation
import XCTest

/// Whatever way a client's bytes are cut into segments, the call's outcome is the same
/// (docs/CONTRACT.md §4, revoked tokens; §7, a call sent twice): the upstream receives the same
/// request and the client the same answer, the 401 healing included. Each request is sent
/// whole, then again cut at several points inside its head and its body, each piece its own
/// segment some milliseconds after the last (as Go's `iotest.HalfReader` and Envoy's codec
/// fuzzers cut their input).
final class SegmentationTests: SidecarTestCase {
    var upstream: RecordingUpstream!

    override func tearDown() {
        super.tearDown()
        upstream?.stop()
    }

    /// A recording HTTP/1.1 upstream that answers the first request for each target 401 (with
    /// Fleet Engine's JSON error, as a revoked token gets) and every later one 200.
    private func startRevokingUpstream() throws {
        let seen = Sightings()
        upstream = try RecordingUpstream { request, _ in
            let target = request.requestLine.split(separator: " ").dropFirst().first.map(String.init) ?? ""
            guard seen.first(target) else { return .bytes(RecordingUpstream.okJSON) }
            let body = #"{"error":{"code":401,"status":"UNAUTHENTICATED"}}"#
            return .bytes(Array("HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8))
        }
        sidecar = try SidecarProcess(["--upstream", "http://\(upstream.address)", "--provider-url", standIns.providerTemplate,
                                      "--upstream-protocol", "http1.1"])
    }

    /// Where a request is cut: byte offsets, each piece sent as its own segment.
    private static func cuts(headLength: Int, bodyLength: Int) -> [(name: String, offsets: [Int])] {
        var cuts: [(String, [Int])] = [
            ("whole", []),
            ("head, then body", [headLength]),
            ("head in two, body in two", [headLength / 2, headLength, headLength + max(1, bodyLength / 2)]),
            ("head with part of the body, then the rest", [headLength + max(1, bodyLength / 2)]),
            ("head cut before its blank line", [headLength - 2, headLength - 1]),
        ]
        if bodyLength > 2 { cuts.append(("body a byte at a time", Array(headLength..<(headLength + bodyLength)))) }
        return cuts
    }

    /// Sends `request` cut at `offsets` (each piece its own segment, 30 ms apart) and reads the
    /// answer.
    private func send(_ request: [UInt8], cutAt offsets: [Int]) throws -> RawClient.Response? {
        let client = try RawClient(address: sidecar.address)
        client.sendEachWriteAtOnce()
        var start = 0
        for offset in offsets + [request.count] where offset > start {
            if start > 0 { usleep(30_000) }
            client.send(Array(request[start..<offset]))
            start = offset
        }
        return client.readResponse(timeout: 10)
    }

    /// For each cut of each request: the client gets 200 (the 401 healed with a fresh token),
    /// and the upstream got the request twice, each time exactly as sent whole.
    private func assertHealedWhateverTheCut(
        method: String, path: String, body: String, chunked: Bool, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let bodyBytes = Array(body.utf8)
        var handled = 0
        for caseIndex in 0..<Self.cuts(headLength: 10, bodyLength: bodyBytes.count).count {
            let target = "\(path)-\(caseIndex)\(method == "POST" ? ":updateLocation" : "")"
            var head = "\(method) \(target) HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            let wire: [UInt8]
            if chunked {
                head += "Transfer-Encoding: chunked\r\n\r\n"
                let half = bodyBytes.count / 2
                let chunks = String(half, radix: 16) + "\r\n" + String(decoding: bodyBytes[..<half], as: UTF8.self) + "\r\n"
                    + String(bodyBytes.count - half, radix: 16) + "\r\n" + String(decoding: bodyBytes[half...], as: UTF8.self) + "\r\n0\r\n\r\n"
                wire = Array((head + chunks).utf8)
            } else {
                head += "Content-Length: \(bodyBytes.count)\r\n\r\n"
                wire = Array(head.utf8) + bodyBytes
            }
            let cut = Self.cuts(headLength: head.utf8.count, bodyLength: wire.count - head.utf8.count)[caseIndex]
            let response = try send(wire, cutAt: cut.offsets)
            XCTAssertEqual(response?.status, 200, "\(method) \(chunked ? "chunked" : "Content-Length"), \(cut.name): the 401 reached the client",
                           file: file, line: line)
            handled += 2
            let requests = upstream.waitForRequests(handled, timeout: 5).filter { $0.requestLine.hasPrefix("\(method) \(target) ") }
            XCTAssertEqual(requests.count, 2, "\(cut.name): the upstream saw \(requests.count) tries", file: file, line: line)
            for request in requests {
                XCTAssertEqual(request.body, bodyBytes, "\(cut.name): the body forwarded is not the body sent", file: file, line: line)
                XCTAssertEqual(request.values("content-length"), ["\(bodyBytes.count)"], "\(cut.name)", file: file, line: line)
                XCTAssertEqual(request.values("authorization").count, 1, "\(cut.name)", file: file, line: line)
            }
        }
    }

    func testARevokedTokenIsHealedWhateverTheSegmentationOfAContentLengthBody() throws {
        try startRevokingUpstream()
        try assertHealedWhateverTheCut(method: "PUT", path: "/v1/providers/p/vehicles/seg-put", body: #"{"a":1}"#, chunked: false)
        try assertHealedWhateverTheCut(method: "POST", path: "/v1/providers/p/vehicles/seg-post", body: #"{"lastLocation":{"location":{"latitude":1}}}"#,
                                       chunked: false)
        try assertHealedWhateverTheCut(method: "PATCH", path: "/v1/providers/p/deliveryVehicles/seg-patch", body: #"{"b":2}"#, chunked: false)
    }

    func testARevokedTokenIsHealedWhateverTheSegmentationOfAChunkedBody() throws {
        try startRevokingUpstream()
        try assertHealedWhateverTheCut(method: "PUT", path: "/v1/providers/p/vehicles/segc-put", body: #"{"a":1}"#, chunked: true)
        try assertHealedWhateverTheCut(method: "POST", path: "/v1/providers/p/vehicles/segc-post", body: #"{"c":3}"#, chunked: true)
    }
}
