import COpenSSL

/// AWS Signature Version 4 (docs/CONTRACT.md §4a, `environment_id` aws1): how an AWS host
/// proves who it is to Google's STS without sending its secret. The sidecar signs a
/// `GetCallerIdentity` request it never sends; STS forwards it to AWS, whose answer names the
/// host's role. Pure functions of their inputs, so AWS's published examples check them.
package enum SigV4 {
    package struct Credentials: Sendable, Equatable, CustomStringConvertible {
        package var accessKeyID: String
        /// Never shown.
        package var secretAccessKey: String
        /// A temporary credential's session token (IMDS, an assumed role); never shown.
        package var sessionToken: String?

        package init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
            self.accessKeyID = accessKeyID
            self.secretAccessKey = secretAccessKey
            self.sessionToken = sessionToken
        }

        package var description: String { "AWS access key \(accessKeyID)" }
    }

    /// The signed request's header fields, in the order Google's libraries list them:
    /// `Authorization`, `host`, `x-amz-date`, then `x-amz-security-token` when there is one.
    /// `host` is the URL's; the path is `/` when the URL has none; `body` is the payload; the
    /// service is the host's first label (`sts` of `sts.us-east-1.amazonaws.com`) unless given.
    package static func sign(method: String, host: String, path: String, query: String, body: String = "",
                             credentials: Credentials, region: String, amzDate: String, service: String? = nil) -> [(key: String, value: String)] {
        let service = service ?? String(host.split(separator: ".").first ?? "")
        let dateStamp = String(amzDate.prefix(8))
        var signed: [(String, String)] = [("host", host), ("x-amz-date", amzDate)]
        if let token = credentials.sessionToken { signed.append(("x-amz-security-token", token)) }
        signed.sort { $0.0 < $1.0 }
        let canonicalHeaders = signed.map { "\($0.0):\($0.1)\n" }.joined()
        let signedHeaders = signed.map(\.0).joined(separator: ";")
        let canonicalRequest = [method, path.isEmpty ? "/" : path, canonicalQuery(query), canonicalHeaders, signedHeaders,
                                hex(sha256(Array(body.utf8)))].joined(separator: "\n")
        let scope = "\(dateStamp)/\(region)/\(service)/aws4_request"
        let stringToSign = ["AWS4-HMAC-SHA256", amzDate, scope, hex(sha256(Array(canonicalRequest.utf8)))].joined(separator: "\n")
        var key = hmac(Array(("AWS4" + credentials.secretAccessKey).utf8), dateStamp)
        for part in [region, service, "aws4_request"] { key = hmac(key, part) }
        let signature = hex(hmac(key, stringToSign))
        var fields: [(key: String, value: String)] = [
            ("Authorization", "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyID)/\(scope), SignedHeaders=\(signedHeaders), Signature=\(signature)"),
            ("host", host), ("x-amz-date", amzDate),
        ]
        if let token = credentials.sessionToken { fields.append(("x-amz-security-token", token)) }
        return fields
    }

    /// The query's pairs, each name and value percent-encoded (all but `A–Z a–z 0–9 - . _ ~`)
    /// after decoding, sorted by name then value.
    static func canonicalQuery(_ query: String) -> String {
        query.split(separator: "&").map { pair -> (String, String) in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func encode(_ text: Substring) -> String {
                String(decoding: FormEncoding.component(text.removingPercentEncodingOrSelf), as: UTF8.self)
            }
            return (encode(parts[0]), parts.count > 1 ? encode(parts[1]) : "")
        }.sorted { $0.0 == $1.0 ? $0.1 < $1.1 : $0.0 < $1.0 }.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
    }

    /// `YYYYMMDDTHHMMSSZ` for epoch seconds.
    package static func amzDate(_ epochSeconds: Double) -> String {
        let seconds = Int(epochSeconds.rounded(.down))
        let days = seconds / 86_400, second = seconds % 86_400
        let (year, month, day) = civil(days)
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(year)\(two(month))\(two(day))T\(two(second / 3600))\(two(second % 3600 / 60))\(two(second % 60))Z"
    }

    /// The proleptic Gregorian date of a day count from 1970-01-01 (Howard Hinnant's
    /// civil_from_days), inverse of `RFC3339.daysFromCivil`.
    package static func civil(_ days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        _ = bytes.withUnsafeBufferPointer { input in digest.withUnsafeMutableBufferPointer { SHA256(input.baseAddress, input.count, $0.baseAddress) } }
        return digest
    }

    static func hmac(_ key: [UInt8], _ message: String) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let data = Array(message.utf8)
        _ = key.withUnsafeBufferPointer { keyBytes in
            data.withUnsafeBufferPointer { dataBytes in
                digest.withUnsafeMutableBufferPointer { out in
                    HMAC(EVP_sha256(), keyBytes.baseAddress, Int32(keyBytes.count), dataBytes.baseAddress, dataBytes.count, out.baseAddress, &length)
                }
            }
        }
        return Array(digest.prefix(Int(length)))
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0x0F)]] }, as: UTF8.self)
    }
}

extension Substring {
    /// Percent-decoded, or as it is when it is not valid percent-encoding.
    fileprivate var removingPercentEncodingOrSelf: String {
        var out: [UInt8] = []
        var bytes = utf8[...]
        while let byte = bytes.first {
            bytes = bytes.dropFirst()
            guard byte == UInt8(ascii: "%") else { out.append(byte); continue }
            guard bytes.count >= 2, let value = UInt8(String(decoding: bytes.prefix(2), as: UTF8.self), radix: 16) else { return String(self) }
            out.append(value)
            bytes = bytes.dropFirst(2)
        }
        return String(decoding: out, as: UTF8.self)
    }
}
