@testable import FleetTokenProxy
import Foundation
@testable import ParserInvariants
import XCTest

/// Replays what the fuzz targets (Fuzz/, scripts/fuzz) are built on: every seed under
/// `Fuzz/Corpus/<target>/` and every finding stored under `Fuzz/Findings/<target>/` goes
/// through that target's invariant. A finding is stored when a campaign finds it and stays
/// after the parser is fixed, so it is a regression test from then on.
final class ParserInvariantReplayTests: XCTestCase {
    static let fuzzFolder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz")

    func testEverySeedAndEveryStoredFindingKeepsItsTargetsInvariant() throws {
        for invariant in ParserInvariants.all {
            let seeds = try inputs(in: "Corpus", invariant.name)
            XCTAssertGreaterThanOrEqual(seeds.count, 8, "\(invariant.name) has too few seeds")
            for (file, bytes) in try seeds + inputs(in: "Findings", invariant.name) {
                do throws(InvariantViolation) {
                    try invariant.check(bytes)
                } catch {
                    XCTFail("\(invariant.name) \(file): \(error)")
                }
            }
        }
    }

    func testEveryFuzzTargetHasAnInvariantAndSeeds() throws {
        let targets = try FileManager.default.contentsOfDirectory(atPath: Self.fuzzFolder.appendingPathComponent("Targets").path)
        XCTAssertEqual(Set(targets), Set(ParserInvariants.all.map { $0.name }))
    }

    // The invariants must be able to fail: each of these breaks one on purpose.

    func testRequestFramingInvariantCatchesAFramingTheFieldsDoNotSay() {
        let head = RequestHead(method: "POST", target: "/x", minorVersion: 1, headers: ["Host": "h", "Content-Length": "5"],
                               framing: .contentLength(6), keepAlive: true, expectsContinue: false)
        XCTAssertThrowsError(try RequestHeadInvariant.checkFraming(head))
        let chunkedInOneZero = RequestHead(method: "POST", target: "/x", minorVersion: 0, headers: ["Transfer-Encoding": "chunked"],
                                           framing: .chunked, keepAlive: false, expectsContinue: false)
        XCTAssertThrowsError(try RequestHeadInvariant.checkFraming(chunkedInOneZero))
    }

    func testRequestFieldInvariantCatchesAControlByteOrABadName() {
        for (name, value) in [("X", "a\rb"), ("X", " padded"), ("Bad Name", "v"), ("X", "a\u{7F}")] {
            let head = RequestHead(method: "GET", target: "/", minorVersion: 0, headers: HTTPHeaders([(name: name, value: value)]),
                                   framing: .none, keepAlive: false, expectsContinue: false)
            XCTAssertThrowsError(try RequestHeadInvariant.checkFields(head), "\(name): \(value)")
        }
    }

    func testEntityIDRuleRefusesWhatSpecTwoForbids() {
        for id in ["", "a/b", "a:b", "a\\b", "a?b", "a#b", "a\u{0}", "a\u{85}", String(repeating: "x", count: 65)] {
            XCTAssertFalse(ByteRules.isEntityID(id), id.debugDescription)
        }
        XCTAssertTrue(ByteRules.isEntityID("caf\u{E9} \u{20AC}-1"))
    }

    func testHeaderFileInvariantCatchesAnOwnedHeaderOrAControlByte() {
        XCTAssertThrowsError(try HeaderFileInvariant.checkHeader((name: "Content-Length", value: "1")))
        XCTAssertThrowsError(try HeaderFileInvariant.checkHeader((name: "X", value: "a\nb")))
        XCTAssertNoThrow(try HeaderFileInvariant.checkHeader((name: "X-Api-Key", value: "k")))
    }

    func testCredentialDescriptionInvariantsCatchAShownSecretButNotAShortOneThatIsAlsoALetter() {
        let token = AccessToken(value: "1", lifetime: 1)
        XCTAssertNoThrow(try AccessTokenAnswerInvariant.checkDescription(token))
        XCTAssertThrowsError(try AccessTokenAnswerInvariant.checkDescription(token) { "access token \($0.value)" })
        XCTAssertThrowsError(try AccessTokenAnswerInvariant.checkDescription(token) { "access token of \($0.value.count) bytes" })
        let user = AuthorizedUserCredentials(clientID: "ab", clientSecret: "a", refreshToken: "b")
        XCTAssertNoThrow(try ADCFileInvariant.checkDescription(user))
        XCTAssertThrowsError(try ADCFileInvariant.checkDescription(user) { "client \($0.clientID) secret \($0.clientSecret)" })
        XCTAssertThrowsError(try ADCFileInvariant.checkDescription(user) { "client \($0.clientID) refresh \($0.refreshToken.prefix(4))" })
    }

    func testH2ResponseTranslationInvariantCatchesAnInjectedLineOrAnotherStatus() {
        let fields: [(name: [UInt8], value: [UInt8])] = [(Array(":status".utf8), Array("200".utf8)), (Array("x-a".utf8), Array("1".utf8))]
        let good = Array("HTTP/1.1 200 OK\r\nx-a: 1\r\nContent-Length: 0\r\n\r\n".utf8)
        XCTAssertNoThrow(try H2ResponseTranslationInvariant.checkHead(good, from: fields))
        let injected = Array("HTTP/1.1 200 OK\r\nx-a: 1\r\nSet-Cookie: x\r\nContent-Length: 0\r\n\r\n".utf8)
        XCTAssertThrowsError(try H2ResponseTranslationInvariant.checkHead(injected, from: fields))
        let otherStatus = Array("HTTP/1.1 502 OK\r\nContent-Length: 0\r\n\r\n".utf8)
        XCTAssertThrowsError(try H2ResponseTranslationInvariant.checkHead(otherStatus, from: fields))
        let twoFramings = Array("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        XCTAssertThrowsError(try H2ResponseTranslationInvariant.checkHead(twoFramings, from: fields))
        let bodyAfter = good + Array("HTTP/1.1 200 OK\r\n\r\n".utf8)
        XCTAssertThrowsError(try H2ResponseTranslationInvariant.checkHead(bodyAfter, from: fields))
    }

    func testH2RequestTranslationInvariantCatchesASecondRequestOrAnotherToken() {
        let fields: [(name: [UInt8], value: [UInt8])] = [(Array(":method".utf8), Array("GET".utf8)), (Array("x-a".utf8), Array("1".utf8))]
        let head = "GET /v1/x HTTP/1.1\r\nHost: fleet.example:443\r\nx-a: 1\r\nTransfer-Encoding: chunked\r\n"
        let good = Array((head + "Authorization: Bearer fuzz-token\r\n\r\n").utf8)
        XCTAssertNoThrow(try H2RequestTranslationInvariant.checkHead(good, from: fields))
        let twoTokens = Array((head + "Authorization: Bearer fuzz-token\r\nAuthorization: Bearer x\r\n\r\n").utf8)
        XCTAssertThrowsError(try H2RequestTranslationInvariant.checkHead(twoTokens, from: fields))
        let injected = Array((head + "Set-Cookie: x\r\nAuthorization: Bearer fuzz-token\r\n\r\n").utf8)
        XCTAssertThrowsError(try H2RequestTranslationInvariant.checkHead(injected, from: fields))
        XCTAssertThrowsError(try H2RequestTranslationInvariant.checkHead(good + Array("GET / HTTP/1.1\r\n\r\n".utf8), from: fields))
        let otherMethod: [(name: [UInt8], value: [UInt8])] = [(Array(":method".utf8), Array("PUT".utf8))]
        XCTAssertThrowsError(try H2RequestTranslationInvariant.checkHead(good, from: otherMethod))
    }

    func testChunkedInvariantComparesReadsOfDifferentSizes() throws {
        let body = Array("5\r\nhello\r\n0\r\n\r\n".utf8)
        let outcome = try body.withUnsafeBytes { try ChunkedBodyInvariant.scan($0, pieces: [3, body.count - 3]) }
        XCTAssertEqual(outcome.data, Array("hello".utf8))
        XCTAssertEqual(outcome.consumed, body.count)
        XCTAssertTrue(outcome.finished)
    }

    private func inputs(in kind: String, _ target: String) throws -> [(String, [UInt8])] {
        let folder = Self.fuzzFolder.appendingPathComponent(kind).appendingPathComponent(target)
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return [] }
        return try names.filter { !$0.hasPrefix(".") }.sorted().map { name in
            (name, Array(try Data(contentsOf: folder.appendingPathComponent(name))))
        }
    }
}
