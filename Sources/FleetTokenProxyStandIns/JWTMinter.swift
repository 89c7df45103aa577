import FleetTokenProxy

/// Mints compact RS256 JWTs shaped the way Fleet Engine expects them (docs/CONTRACT.md §2), as an operator's
/// token provider would. The stand-in provider hands them out; tests mint them directly, and
/// mint wrong ones on purpose by editing `Claims` before `mint(_:)`:
///
///     var claims = JWTMinter.Claims(for: vehicle, issuedAt: now)
///     claims.authorization = .init(for: otherVehicle)   // another entity's token
///     claims.audience = "https://example.com/"          // wrong audience
///     claims.expiresAt = claims.issuedAt + 7200         // exp too far ahead
package struct JWTMinter: Sendable {
    /// The `aud` Fleet Engine requires.
    package static let fleetEngineAudience = "https://fleetengine.googleapis.com/"

    /// The longest `exp − iat` Fleet Engine accepts.
    package static let maximumLifetime = 3600

    package let keyPair: RSAKeyPair
    /// A signature put on every token instead of one computed over it. An RS256 signature costs
    /// about a millisecond of CPU, which would make a benchmark that mints 100k tokens measure
    /// the stand-in provider; with this the tokens keep their shape and length but no longer
    /// verify, so it is only for upstreams that check nothing (`stand-in provider --reuse-signature`).
    package var reusedSignature: [UInt8]?

    package init(keyPair: RSAKeyPair) {
        self.keyPair = keyPair
    }

    /// The service account the stand-ins sign as for a provider (Google Cloud project). Fleet
    /// Engine accepts only tokens of a service account of the project the call names, so the
    /// stand-in Fleet Engine reads the project back out of `iss`.
    package static func serviceAccount(forProvider provider: String) -> String {
        "fleet-engine-stand-in@\(provider).iam.gserviceaccount.com"
    }

    /// The project a service account belongs to: `NAME@PROJECT.iam.gserviceaccount.com`; nil
    /// for an address of another shape.
    package static func project(ofServiceAccount account: String) -> String? {
        let suffix = ".iam.gserviceaccount.com"
        guard let at = account.firstIndex(of: "@"), account.hasSuffix(suffix) else { return nil }
        let project = account[account.index(after: at)...].dropLast(suffix.count)
        return project.isEmpty ? nil : String(project)
    }

    /// The `authorization` claim: which entities the token may act on. `"*"` means every entity
    /// of that kind.
    package struct AuthorizationClaim: Sendable, Equatable {
        package var vehicleID: String?
        package var tripID: String?
        package var deliveryVehicleID: String?
        package var taskID: String?
        package var taskIDs: [String]?
        package var trackingID: String?

        package init(
            vehicleID: String? = nil, tripID: String? = nil, deliveryVehicleID: String? = nil,
            taskID: String? = nil, taskIDs: [String]? = nil, trackingID: String? = nil
        ) {
            self.vehicleID = vehicleID
            self.tripID = tripID
            self.deliveryVehicleID = deliveryVehicleID
            self.taskID = taskID
            self.taskIDs = taskIDs
            self.trackingID = trackingID
        }

        /// The claim an operator's provider issues for `entity`; the fleet gets `"*"` for every kind.
        package init(for entity: EntityKey) {
            self.init()
            switch entity.type {
            case .vehicle: vehicleID = entity.id
            case .trip: tripID = entity.id
            case .deliveryVehicle: deliveryVehicleID = entity.id
            case .task: taskID = entity.id
            case .tracking: trackingID = entity.id
            case .fleet:
                vehicleID = "*"
                tripID = "*"
                deliveryVehicleID = "*"
                taskID = "*"
                trackingID = "*"
            }
        }

        /// The claim as Fleet Engine spells it (docs/CONTRACT.md §2).
        var jsonObject: [String: JSONish] {
            var object: [String: JSONish] = [:]
            object["vehicleid"] = vehicleID.map(JSONish.string)
            object["tripid"] = tripID.map(JSONish.string)
            object["deliveryvehicleid"] = deliveryVehicleID.map(JSONish.string)
            object["taskid"] = taskID.map(JSONish.string)
            object["taskids"] = taskIDs.map { .array($0.map(JSONish.string)) }
            object["trackingid"] = trackingID.map(JSONish.string)
            return object
        }

        /// Reads the claim from decoded JSON; nil when it is not an object of strings (and one
        /// array of strings for `taskids`). Unknown fields are ignored.
        init?(jsonObject: JSONish) {
            guard case .object(let object) = jsonObject else { return nil }
            func string(_ name: String) -> String?? {
                guard let value = object[name] else { return .some(nil) }
                return value.stringValue.map { .some($0) }
            }
            guard let vehicleID = string("vehicleid"), let tripID = string("tripid"),
                  let deliveryVehicleID = string("deliveryvehicleid"), let taskID = string("taskid"),
                  let trackingID = string("trackingid")
            else { return nil }
            var taskIDs: [String]?
            if let value = object["taskids"] {
                guard case .array(let list) = value else { return nil }
                let strings = list.compactMap(\.stringValue)
                guard strings.count == list.count else { return nil }
                taskIDs = strings
            }
            self.init(
                vehicleID: vehicleID, tripID: tripID, deliveryVehicleID: deliveryVehicleID,
                taskID: taskID, taskIDs: taskIDs, trackingID: trackingID)
        }
    }

    /// Everything that goes into one token. The defaults from `init(for:issuedAt:lifetime:)`
    /// make a token Fleet Engine accepts for that entity; change a field to make one it refuses.
    package struct Claims: Sendable {
        /// `iss`, and `sub` unless `subject` is set.
        package var serviceAccount: String
        package var subject: String?
        package var audience: String
        /// `iat`, epoch seconds.
        package var issuedAt: Int
        /// `exp`, epoch seconds; nil leaves the claim out.
        package var expiresAt: Int?
        package var authorization: AuthorizationClaim

        /// A valid token's claims: issued at `issuedAt` (wall clock, rounded down to the
        /// second) and valid for `lifetime` seconds, at least one.
        package init(for entity: EntityKey, issuedAt: Double, lifetime: Double = 3600) {
            let issued = Int(issuedAt.rounded(.down))
            self.serviceAccount = JWTMinter.serviceAccount(forProvider: entity.provider)
            self.subject = nil
            self.audience = JWTMinter.fleetEngineAudience
            self.issuedAt = issued
            self.expiresAt = issued + max(1, Int(lifetime.rounded()))
            self.authorization = AuthorizationClaim(for: entity)
        }
    }

    /// A valid token for `entity`, unless `lifetime` is over an hour.
    package func mint(for entity: EntityKey, issuedAt: Double, lifetime: Double = 3600) throws -> String {
        try mint(Claims(for: entity, issuedAt: issuedAt, lifetime: lifetime))
    }

    /// A compact JWS: base64url(header) . base64url(claims) . base64url(RS256 signature).
    package func mint(_ claims: Claims) throws -> String {
        let header: [String: JSONish] = ["alg": .string("RS256"), "typ": .string("JWT"), "kid": .string(keyPair.keyID)]
        var payload: [String: JSONish] = [
            "iss": .string(claims.serviceAccount),
            "sub": .string(claims.subject ?? claims.serviceAccount),
            "aud": .string(claims.audience),
            "iat": .number(Double(claims.issuedAt)),
            "authorization": .object(claims.authorization.jsonObject),
        ]
        payload["exp"] = claims.expiresAt.map { .number(Double($0)) }
        let signingInput = Base64URL.encode(Self.json(header)) + "." + Base64URL.encode(Self.json(payload))
        let signature = try reusedSignature ?? keyPair.sign(Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }

    private static func json(_ object: [String: JSONish]) -> [UInt8] {
        Array(JSONish.object(object).jsonText.utf8)
    }

    /// Unpadded base64url (RFC 4648 §5), as JWS uses it (RFC 7515 §2): the sidecar's own
    /// encoder, and a strict reader for the stand-in Fleet Engine's checks.
    enum Base64URL {
        static func encode(_ bytes: [UInt8]) -> String {
            FleetTokenProxy.Base64URL.encode(bytes)
        }

        /// nil for anything but canonical unpadded base64url: padding, other characters, a
        /// dangling character, or leftover bits that are not zero.
        static func decode<S: StringProtocol>(_ text: S) -> [UInt8]? {
            let input = Array(text.utf8)
            guard input.count % 4 != 1 else { return nil }
            var out: [UInt8] = []
            out.reserveCapacity(input.count * 3 / 4)
            var accumulator: UInt32 = 0
            var bits = 0
            for character in input {
                guard let value = sextet(character) else { return nil }
                accumulator = accumulator << 6 | UInt32(value)
                bits += 6
                if bits >= 8 {
                    bits -= 8
                    out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                    accumulator &= (1 << UInt32(bits)) - 1
                }
            }
            guard accumulator == 0 else { return nil }
            return out
        }

        private static func sextet(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): return c - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): return c - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0") + 52
            case UInt8(ascii: "-"): return 62
            case UInt8(ascii: "_"): return 63
            default: return nil
            }
        }
    }
}
