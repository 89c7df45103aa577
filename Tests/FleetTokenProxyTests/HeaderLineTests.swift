import XCTest
@testable import FleetTokenProxy

final class HeaderLineTests: XCTestCase {
    private func parseError(_ line: String, file: StaticString = #filePath, line testLine: UInt = #line) -> String {
        do {
            let header = try HeaderLine.parse(line)
            XCTFail("\(line) parsed as \(header)", file: file, line: testLine)
            return ""
        } catch {
            return error.message
        }
    }

    private func fileError(_ contents: String, file: StaticString = #filePath, line: UInt = #line) -> String {
        do {
            let headers = try HeaderLine.parseFile(contents: contents)
            XCTFail("parsed as \(headers)", file: file, line: line)
            return ""
        } catch {
            return error.message
        }
    }

    func testParsesNameAndValue() throws {
        let header = try HeaderLine.parse("Authorization: Bearer abc.def")
        XCTAssertEqual(header.name, "Authorization")
        XCTAssertEqual(header.value, "Bearer abc.def")
    }

    func testValueIsTrimmedOfSpacesAndTabsButKeepsInnerOnes() throws {
        let header = try HeaderLine.parse("X-Api-Key:\t  a b\tc \t ")
        XCTAssertEqual(header.name, "X-Api-Key")
        XCTAssertEqual(header.value, "a b\tc")
    }

    /// Fuzzing finding (Fuzz/Findings/header-file/space-before-combining-mark): a space followed by a
    /// combining mark is one Swift Character, so trimming by Character kept the space.
    func testSpaceBeforeACombiningMarkIsTrimmedFromTheValue() throws {
        let header = try HeaderLine.parse("||: \u{5BA}")
        XCTAssertEqual(Array(header.value.utf8), [0xD6, 0xBA])
        let trailing = try HeaderLine.parse("X-A: v \t")
        XCTAssertEqual(trailing.value, "v")
    }

    func testColonsInValueAreKept() throws {
        XCTAssertEqual(try HeaderLine.parse("Authorization: Basic dXNlcjpwYXNz:x").value, "Basic dXNlcjpwYXNz:x")
    }

    func testNameMayUseEveryTokenCharacter() throws {
        let name = "Az09!#$%&'*+-.^_`|~"
        XCTAssertEqual(try HeaderLine.parse("\(name): v").name, name)
    }

    func testNonTokenNamesAreRefused() {
        for line in ["X Key: v", "X-Key : v", " X-Key: v", "X(Key): v", "X\"Key: v", "Ключ: v", "X/Key: v"] {
            XCTAssertTrue(parseError(line).contains("token"), line)
        }
    }

    func testEmptyNameIsRefused() {
        XCTAssertTrue(parseError(": value").contains("empty name"))
    }

    func testLineWithoutColonIsRefusedWithoutEchoingIt() {
        let message = parseError("s3cr3t-token-value")
        XCTAssertTrue(message.contains("Name: value"), message)
        XCTAssertFalse(message.contains("s3cr3t"), message)
    }

    func testCRLFAndNULAreRefusedAnywhere() {
        XCTAssertTrue(parseError("X-Key: a\rb").contains("CR or LF"))
        XCTAssertTrue(parseError("X-Key: a\nInjected: b").contains("CR or LF"))
        XCTAssertTrue(parseError("X-Key: a\r\n").contains("CR or LF"))
        XCTAssertTrue(parseError("X-K\rey: a").contains("CR or LF"))
        XCTAssertTrue(parseError("X-Key: a\u{0}b").contains("NUL"))
    }

    func testOtherControlCharactersInValueAreRefusedWithoutEchoingIt() {
        let message = parseError("X-Key: s3cr3t\u{1B}x")
        XCTAssertTrue(message.contains("control character"), message)
        XCTAssertFalse(message.contains("s3cr3t"), message)
        XCTAssertTrue(parseError("X-Key: a\u{7F}").contains("control character"))
    }

    func testEmptyValueIsRefused() {
        XCTAssertTrue(parseError("X-Key:").contains("empty value"))
        XCTAssertTrue(parseError("X-Key:  \t ").contains("empty value"))
    }

    func testHeadersTheClientOwnsAreRefusedInAnyCase() {
        for name in ["Host", "host", "Content-Length", "content-length", "Transfer-Encoding",
                     "TRANSFER-ENCODING", "Connection", "Keep-Alive", "Upgrade", "TE", "Trailer", "Proxy-Connection"] {
            XCTAssertTrue(parseError("\(name): x").contains("may not be configured"), name)
        }
    }

    func testNonASCIIValueIsAllowed() throws {
        XCTAssertEqual(try HeaderLine.parse("X-Team: Zürich").value, "Zürich")
    }

    func testFileSkipsBlankLinesAndComments() throws {
        let contents = """
        # credentials for the token service

        Authorization: Bearer abc
          # indented comment
        \t
        X-Client: sidecar

        """
        let headers = try HeaderLine.parseFile(contents: contents)
        XCTAssertEqual(headers.map(\.name), ["Authorization", "X-Client"])
        XCTAssertEqual(headers.map(\.value), ["Bearer abc", "sidecar"])
    }

    func testFileKeepsRepeatedHeadersInOrder() throws {
        let headers = try HeaderLine.parseFile(contents: "X-A: 1\nX-A: 2\n")
        XCTAssertEqual(headers.map(\.value), ["1", "2"])
    }

    func testFileAcceptsCRLFLineEndsAndByteOrderMark() throws {
        let headers = try HeaderLine.parseFile(contents: "\u{FEFF}X-A: 1\r\n\r\nX-B: 2\r\n")
        XCTAssertEqual(headers.map(\.name), ["X-A", "X-B"])
        XCTAssertEqual(headers.map(\.value), ["1", "2"])
    }

    func testEmptyFileHasNoHeaders() throws {
        XCTAssertTrue(try HeaderLine.parseFile(contents: "").isEmpty)
        XCTAssertTrue(try HeaderLine.parseFile(contents: "\n# nothing\n").isEmpty)
    }

    func testFileErrorNamesTheLineNumberButNeverTheValue() {
        let message = fileError("# comment\nX-Ok: fine\nX Bad: s3cr3t-value\n")
        XCTAssertTrue(message.contains("line 3"), message)
        XCTAssertFalse(message.contains("s3cr3t"), message)

        let noColon = fileError("X-Ok: fine\n\nhunter2hunter2\n")
        XCTAssertTrue(noColon.contains("line 3"), noColon)
        XCTAssertFalse(noColon.contains("hunter2"), noColon)

        let control = fileError("X-Key: s3cr3t\u{7}\n")
        XCTAssertTrue(control.contains("line 1"), control)
        XCTAssertFalse(control.contains("s3cr3t"), control)
    }

    func testFileWithForbiddenHeaderNamesItsLine() {
        let message = fileError("X-A: 1\nHost: evil.example\n")
        XCTAssertTrue(message.contains("line 2"), message)
        XCTAssertFalse(message.contains("evil.example"), message)
    }

    func testFileWithLoneCarriageReturnIsRefused() {
        XCTAssertTrue(fileError("X-A: a\rb\n").contains("CR or LF"))
    }
}
