import CNghttp2
import XCTest
@testable import FleetTokenProxy

final class H2HeaderListTests: XCTestCase {
    private func fields(_ list: H2HeaderList) -> [String] {
        (0..<list.count).map { "\(list.name(at: $0))=\(list.value(at: $0))" }
    }

    func testAppendsKeepOrderAndBytes() {
        var list = H2HeaderList()
        XCTAssertTrue(list.isEmpty)
        list.append(name: ":status", value: "200")
        list.append(name: "content-type", value: "application/grpc" as String)
        list.append(name: "authorization", prefix: "Bearer ", value: "abc.def")
        list.append(name: "x-empty", value: "")
        XCTAssertEqual(fields(list), [":status=200", "content-type=application/grpc", "authorization=Bearer abc.def", "x-empty="])
        XCTAssertTrue(list.name(at: 2, is: "authorization"))
        XCTAssertTrue(list.value(at: 0, is: "200"))
        XCTAssertFalse(list.value(at: 0, is: "20"))
        XCTAssertEqual(list.first("content-type"), "application/grpc")
        XCTAssertNil(list.first("te"))
    }

    func testBytePrefix() {
        "application/grpc+proto".withByteView { value in
            XCTAssertTrue(value.hasPrefix("application/grpc"))
            XCTAssertTrue(value.hasPrefix(""))
            XCTAssertFalse(value.hasPrefix("application/json"))
            XCTAssertFalse(value.slice(0..<11).hasPrefix("application/grpc"))
        }
    }

    func testGrowsPastItsFirstCapacity() {
        var list = H2HeaderList()
        let long = String(repeating: "t", count: 3000)
        for i in 0..<40 { list.append(name: "x-field", value: "\(i)") }
        list.append(name: "authorization", prefix: "Bearer ", value: long)
        XCTAssertEqual(list.count, 41)
        XCTAssertEqual(list.value(at: 39), "39")
        XCTAssertEqual(list.value(at: 40), "Bearer " + long)
    }

    func testCopiesAreIndependent() {
        var a = H2HeaderList()
        a.append(name: "a", value: "1")
        var b = a
        b.append(name: "b", value: "2")
        a.append(name: "c", value: "3")
        XCTAssertEqual(fields(a), ["a=1", "c=3"])
        XCTAssertEqual(fields(b), ["a=1", "b=2"])
        // Emptied and reused while a copy still holds the old fields.
        let kept = a
        a.removeAll()
        a.append(name: "d", value: "4")
        XCTAssertEqual(fields(a), ["d=4"])
        XCTAssertEqual(fields(kept), ["a=1", "c=3"])
    }

    /// An HTTP/1.1 name goes to HTTP/2 lower-cased as it is stored: only its ASCII capitals
    /// change, never its value, and never a copy that shares the storage.
    func testAppendLowerCasingChangesOnlyTheNamesCapitals() {
        var list = H2HeaderList()
        list.append(name: "x-first", value: "One")
        let kept = list
        "X-Request-ID_@[`{".withByteView { name in
            "Mixed Case VALUE".withByteView { value in list.append(lowerCasing: name, value: value) }
        }
        XCTAssertEqual(fields(list), ["x-first=One", "x-request-id_@[`{=Mixed Case VALUE"])
        XCTAssertEqual(fields(kept), ["x-first=One"])
    }

    func testAppendingFieldsOfAnotherListAndItself() {
        var a = H2HeaderList()
        a.append(name: "a", value: "1")
        a.append(name: "b", value: "2")
        var c = H2HeaderList()
        c.append(name: ":path", value: "/x")
        c.append(contentsOf: a)
        c.append(field: 1, of: a)
        XCTAssertEqual(fields(c), [":path=/x", "a=1", "b=2", "b=2"])
        let copy = a
        a.append(contentsOf: copy)
        XCTAssertEqual(fields(a), ["a=1", "b=2", "a=1", "b=2"])
    }

    func testNVArrayPointsAtEachField() {
        var list = H2HeaderList()
        list.append(name: ":method", value: "POST")
        list.append(name: "x-empty", value: "")
        let seen: [String] = list.withNV { nva, count in
            (0..<count).map { i in
                let nv = nva[i]
                let name = String(decoding: UnsafeBufferPointer(start: nv.name, count: nv.namelen), as: UTF8.self)
                let value = String(decoding: UnsafeBufferPointer(start: nv.value, count: nv.valuelen), as: UTF8.self)
                return "\(name)=\(value)"
            }
        }
        XCTAssertEqual(seen, [":method=POST", "x-empty="])
        XCTAssertEqual(H2HeaderList().withNV { _, count in count }, 0)
    }

    func testNVArrayReorderedAndFiltered() {
        var list = H2HeaderList()
        list.append(name: "server", value: "x")
        list.append(name: ":status", value: "200")
        list.append(name: "connection", value: "close")
        list.append(name: "content-type", value: "application/grpc")
        let seen: [String] = list.withNV(leading: { $0 == ":status" },
                                         dropping: { $0 == "connection" }) { nva, count in
            (0..<count).map { String(decoding: UnsafeBufferPointer(start: nva[$0].name, count: nva[$0].namelen), as: UTF8.self) }
        }
        XCTAssertEqual(seen, [":status", "server", "content-type"])
    }
}
