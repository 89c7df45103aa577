import XCTest
@testable import FleetTokenProxy

/// `HeadFields` (HTTP/1.1) and `H2HeaderList` (HTTP/2) walk their fields the same way: names
/// and values as byte views, in arrival order, until the closure says stop.
final class HeaderFieldBytesTests: XCTestCase {
    private func walk<Fields: HeaderFieldBytes>(_ fields: Fields, stopAfter stop: StaticString? = nil) -> [String] {
        var seen: [String] = []
        fields.forEach { name, value in
            seen.append("\(name.string)=\(value.string)")
            return stop.map { !name.equalsLowercased($0) } ?? true
        }
        return seen
    }

    private let pairs = [("Host", "example.com"), ("X-A", " spaced "), ("Stop", "here"), ("X-B", "")]

    private var headFields: HeadFields {
        let head = "GET / HTTP/1.1\r\n" + pairs.map { "\($0.0): \($0.1)\r\n" }.joined() + "\r\n"
        guard case .complete(let parsed, _) = Array(head.utf8).withUnsafeBytes({
            HTTP1Parser.parseRequest($0, maxHeadBytes: 4096, maxHeaderCount: 16)
        }) else {
            XCTFail("not parsed")
            return HeadFields()
        }
        return parsed.fields
    }

    private var h2List: H2HeaderList {
        var list = H2HeaderList()
        for (name, value) in pairs {
            name.lowercased().withByteView { n in value.withByteView { list.append(name: n, value: $0) } }
        }
        return list
    }

    func testHeadFieldsWalkInOrderWithValuesTrimmedAndStop() {
        XCTAssertEqual(walk(headFields), ["Host=example.com", "X-A=spaced", "Stop=here", "X-B="])
        XCTAssertEqual(walk(headFields, stopAfter: "stop"), ["Host=example.com", "X-A=spaced", "Stop=here"])
        XCTAssertEqual(walk(HeadFields()), [])
    }

    func testH2HeaderListWalksInOrderAndStops() {
        XCTAssertEqual(walk(h2List), ["host=example.com", "x-a= spaced ", "stop=here", "x-b="])
        XCTAssertEqual(walk(h2List, stopAfter: "host"), ["host=example.com"])
        XCTAssertEqual(walk(H2HeaderList()), [])
    }

    func testFirstNonNilStopsAtTheFirstAnswer() {
        var asked = 0
        let found: String? = h2List.firstNonNil { name, value in
            asked += 1
            return name.hasPrefix("x-") ? value.string : nil
        }
        XCTAssertEqual(found, " spaced ")
        XCTAssertEqual(asked, 2)
        XCTAssertNil(headFields.firstNonNil { name, _ in name == "absent" ? 1 : nil })
    }
}
