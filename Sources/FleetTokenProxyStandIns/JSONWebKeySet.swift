import FleetTokenProxy
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// RSA public keys as a JSON Web Key Set (RFC 7517 §5), the way Google publishes each service
/// account's keys: the stand-in Fleet Engine's `--jwks` reads them, tests write them.
package enum JSONWebKeySet {
    /// `{"keys":[{"kty":"RSA","alg":"RS256","use":"sig","kid":…,"n":…,"e":…}]}`.
    package static func text(for keyPairs: [RSAKeyPair]) throws -> String {
        let keys: [JSONish] = try keyPairs.map { pair in
            let numbers = try pair.publicNumbers()
            return .object([
                "kty": .string("RSA"), "alg": .string("RS256"), "use": .string("sig"), "kid": .string(pair.keyID),
                "n": .string(Base64URL.encode(numbers.modulus)), "e": .string(Base64URL.encode(numbers.exponent)),
            ])
        }
        return JSONish.object(["keys": .array(keys)]).jsonText
    }

    /// The RSA keys of a JWKS, trusted for `account` (nil: any account). Keys of another type
    /// are skipped, as a verifier skips keys it cannot use.
    package static func trustedKeys(_ bytes: [UInt8], account: String?) throws -> [FleetEngineTokenCheck.TrustedKey] {
        guard case .object(let set)? = JSONish.parse(bytes), case .array(let keys)? = set["keys"] else {
            throw ConfigError("not a JSON Web Key Set ({\"keys\":[…]})")
        }
        var trusted: [FleetEngineTokenCheck.TrustedKey] = []
        for case .object(let key) in keys where key["kty"]?.stringValue == "RSA" {
            guard let kid = key["kid"]?.stringValue,
                  let n = key["n"]?.stringValue.flatMap({ JWTMinter.Base64URL.decode($0) }),
                  let e = key["e"]?.stringValue.flatMap({ JWTMinter.Base64URL.decode($0) })
            else { throw ConfigError("an RSA key without kid, n or e in base64url") }
            trusted.append(FleetEngineTokenCheck.TrustedKey(account: account, keyID: kid, publicKey: try RSAPublicKey(modulus: n, exponent: e)))
        }
        return trusted
    }

    /// The keys in `path`: one JWKS file, or a directory of them. A file named
    /// `ACCOUNT.json` (an address with `@`) holds that account's keys, trusted for it alone;
    /// any other file's keys sign for any account.
    package static func trustedKeys(at path: String) throws -> [FleetEngineTokenCheck.TrustedKey] {
        guard FileManager.default.fileExists(atPath: path) else {
            throw ConfigError("--jwks \(path) does not exist")
        }
        let isDirectory = (try? FileManager.default.contentsOfDirectory(atPath: path)) != nil
        let files = isDirectory
            ? try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasSuffix(".json") }.sorted().map { path + "/" + $0 }
            : [path]
        var trusted: [FleetEngineTokenCheck.TrustedKey] = []
        for file in files {
            guard let data = FileManager.default.contents(atPath: file) else { throw ConfigError("--jwks \(file) cannot be read") }
            let name = String(file.split(separator: "/").last ?? "")
            let stem = name.hasSuffix(".json") ? String(name.dropLast(".json".count)) : name
            do {
                trusted += try trustedKeys(Array(data), account: stem.contains("@") ? stem : nil)
            } catch let error as ConfigError {
                throw ConfigError("--jwks \(file): \(error.message)")
            }
        }
        return trusted
    }
}
