import FleetTokenProxy

/// An EC2 instance metadata service for tests (docs/CONTRACT.md §4a, `environment_id` aws1):
/// IMDSv2's session token (`PUT /latest/api/token` with its TTL header; every other path then
/// wants `X-aws-ec2-metadata-token`), the availability zone, the role name and the role's
/// temporary credentials. The stand-in Google's STS checks requests signed with them.
///
/// Loop-bound: call `handler`, change settings and read counts on one thread.
package final class StandInAWS {
    package static let tokenPath = "/latest/api/token"
    package static let zonePath = "/latest/meta-data/placement/availability-zone"
    package static let credentialsPath = "/latest/meta-data/iam/security-credentials"

    package var zone = "eu-west-3b"
    package var role = "fleet-sidecar-role"
    package let credentials = SigV4.Credentials(accessKeyID: "ASIASTANDIN0EXAMPLE", secretAccessKey: "stand-in/secret+KEY",
                                                sessionToken: "IQoJb3JpZ2luX2Vj-stand-in-session")
    /// Whether calls without a session token are refused, as an instance that requires IMDSv2.
    package var requiresSessionToken = true
    package private(set) var sessionTokenRequests = 0
    package private(set) var credentialRequests = 0
    private var sessionTokens: Set<String> = []
    private var serial = 0

    package init() {}

    package var handler: HTTPHandler {
        { request, respond in respond(self.answer(request)) }
    }

    private func answer(_ request: HTTPRequest) -> HTTPResponse {
        func text(_ status: Int, _ body: String) -> HTTPResponse {
            HTTPResponse(status: status, headers: ["Content-Type": "text/plain"], body: Array(body.utf8))
        }
        if request.method == "PUT" && request.path == Self.tokenPath {
            guard request.headers["X-aws-ec2-metadata-token-ttl-seconds"] != nil else { return text(400, "Bad Request") }
            sessionTokenRequests += 1
            serial += 1
            let token = "AQAEAstand-in-imds-\(serial)"
            sessionTokens.insert(token)
            return text(200, token)
        }
        guard request.method == "GET" else { return text(405, "Method Not Allowed") }
        if requiresSessionToken, !(request.headers["X-aws-ec2-metadata-token"].map(sessionTokens.contains) ?? false) {
            return text(401, "Unauthorized")
        }
        switch String(request.path) {
        case Self.zonePath:
            return text(200, zone)
        case Self.credentialsPath:
            return text(200, role)
        case Self.credentialsPath + "/" + role:
            credentialRequests += 1
            return .json(200, JSONish.object([
                "Code": .string("Success"), "Type": .string("AWS-HMAC"), "AccessKeyId": .string(credentials.accessKeyID),
                "SecretAccessKey": .string(credentials.secretAccessKey), "Token": .string(credentials.sessionToken ?? ""),
                "Expiration": .string("2030-01-01T00:00:00Z"),
            ]).jsonText)
        default:
            return text(404, "Not Found")
        }
    }
}
