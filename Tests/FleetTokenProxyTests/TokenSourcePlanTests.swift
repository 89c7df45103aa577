import XCTest
@testable import FleetTokenProxy

/// `--signer [TYPES=]SOURCE` and which source each token type gets (docs/CONTRACT.md §4a).
final class TokenSourcePlanTests: XCTestCase {
    func testSignerFlagReadsTypesAndAKeyFilePath() throws {
        XCTAssertEqual(try SignerFlag.parse("key-file:/etc/key.json"), SignerFlag(types: nil, source: .keyFile(path: "/etc/key.json")))
        XCTAssertEqual(try SignerFlag.parse("vehicle,delivery_vehicle=key-file:/k.json"),
                       SignerFlag(types: [.vehicle, .deliveryVehicle], source: .keyFile(path: "/k.json")))
        // An `=` inside the path is not a TYPES list.
        XCTAssertEqual(try SignerFlag.parse("key-file:/keys/a=b.json"), SignerFlag(types: nil, source: .keyFile(path: "/keys/a=b.json")))
    }

    func testEverySourceIsReadAndUnknownTypesAndSourcesAreRefused() throws {
        func message(_ text: String) -> String {
            do {
                _ = try SignerFlag.parse(text)
                return "accepted"
            } catch { return error.message }
        }
        XCTAssertEqual(try SignerFlag.parse("fleet,task=iam:robot@p.iam.gserviceaccount.com"),
                       SignerFlag(types: [.fleet, .task], source: .iam(account: "robot@p.iam.gserviceaccount.com")))
        XCTAssertTrue(message("iam:robot").contains("NAME@PROJECT"))
        XCTAssertTrue(message("iam:a/b@p").contains("NAME@PROJECT"), "nothing that would change IAM's URL path")
        XCTAssertEqual(try SignerFlag.parse("trip=adc"), SignerFlag(types: [.trip], source: .adc))
        XCTAssertEqual(try SignerFlag.parse("adc"), SignerFlag(types: nil, source: .adc))
        XCTAssertTrue(message("key-file:").contains("PATH"))
        XCTAssertTrue(message("vehicles=key-file:/k").contains("--signer must be"), "a misspelt type is not a type")
        XCTAssertTrue(message("/k.json").contains("--signer must be"))
    }

    func testTypesNoSignerNamesGoToTheCatchAllSignerElseTheProvider() throws {
        let named = SignerFlag(types: [.vehicle], source: .keyFile(path: "/a"))
        let rest = SignerFlag(types: nil, source: .keyFile(path: "/b"))
        let plan = try TokenSourcePlan(signers: [named, rest], hasProvider: true)
        XCTAssertEqual(plan.sources[.vehicle], .signer(0))
        XCTAssertEqual(plan.sources[.fleet], .signer(1), "a --signer without TYPES wins over the provider")
        XCTAssertFalse(plan.usesProvider)

        let mixed = try TokenSourcePlan(signers: [named], hasProvider: true)
        XCTAssertEqual(mixed.sources[.vehicle], .signer(0))
        XCTAssertEqual(mixed.sources[.trip], .provider)
        XCTAssertTrue(mixed.usesProvider)
        XCTAssertEqual(try TokenSourcePlan(signers: [], hasProvider: true).sources.values.filter { $0 == .provider }.count,
                       EntityType.allCases.count)
    }

    func testOverlapsTwoCatchAllsAndUncoveredTypesAreRefused() {
        let key = SignerFlag.Source.keyFile(path: "/k")
        XCTAssertThrowsError(try TokenSourcePlan(signers: [.init(types: [.trip], source: key), .init(types: [.vehicle, .trip], source: key)],
                                                 hasProvider: true)) { XCTAssertTrue("\($0)".contains("trip is named twice")) }
        XCTAssertThrowsError(try TokenSourcePlan(signers: [.init(types: nil, source: key), .init(types: nil, source: key)], hasProvider: false))
        XCTAssertThrowsError(try TokenSourcePlan(signers: [.init(types: [.vehicle, .fleet], source: key)], hasProvider: false)) {
            XCTAssertTrue("\($0)".contains("no token source for trip, delivery_vehicle, task, tracking:"), "\($0)")
        }
        XCTAssertThrowsError(try TokenSourcePlan(signers: [], hasProvider: false)) { XCTAssertTrue("\($0)".contains("--provider-url")) }
    }
}
