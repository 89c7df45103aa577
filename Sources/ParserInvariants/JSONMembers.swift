import FleetTokenProxy

/// The members of `bytes` read as a JSON object, or none when they are not one: what the
/// credential invariants compare an accepted answer or key file with, field by field.
func jsonMembers(_ bytes: [UInt8]) -> [String: JSONish] {
    if case .object(let members)? = JSONish.parse(bytes) { return members }
    return [:]
}
