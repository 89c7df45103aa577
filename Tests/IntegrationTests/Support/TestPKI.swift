import Foundation
import XCTest

/// Certificates made at test time with the openssl CLI (EC P-256 keys: quick to make), for the
/// X.509 credential source: the stand-in Google's server certificate for 127.0.0.1 and its CA;
/// a workload identity pool's trust anchor (a root), an intermediate it signed, and a device
/// certificate the intermediate signed (so the pool needs the trust chain file to verify it);
/// a renewed device certificate from the same intermediate; and a device certificate of a CA the
/// pool does not trust.
struct TestPKI {
    let directory: String

    init(in directory: String) throws {
        self.directory = directory
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: Self.openssl), "openssl CLI missing")
        try write("basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n", to: "ca.cnf")
        try write("subjectAltName=IP:127.0.0.1\n", to: "server.cnf")
        try write("basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n", to: "device.cnf")
        try selfSigned("server-ca", subject: "stand-in Google test CA")
        try issue("server", subject: "127.0.0.1", by: "server-ca", extensions: "server.cnf")
        try selfSigned("pool-root", subject: "pool trust anchor")
        try issue("pool-intermediate", subject: "pool intermediate", by: "pool-root", extensions: "ca.cnf")
        try issue("device", subject: "device-1", by: "pool-intermediate", extensions: "device.cnf")
        try issue("device-renewed", subject: "device-1 renewed", by: "pool-intermediate", extensions: "device.cnf")
        try selfSigned("rogue-ca", subject: "a CA the pool does not trust")
        try issue("rogue-device", subject: "device-2", by: "rogue-ca", extensions: "device.cnf")
    }

    static let openssl = "/usr/bin/openssl"

    /// `name.pem` (a certificate) or `name.key` (its key) in the directory.
    func path(_ file: String) -> String { directory + "/" + file }

    /// The DER of the certificate in `name.pem`.
    func der(_ name: String) throws -> [UInt8] {
        let result = try runCommand(Self.openssl, ["x509", "-in", path(name + ".pem"), "-outform", "DER", "-out", path(name + ".der")])
        if result.status != 0 { throw SidecarError("openssl failed: \(result.stderr)") }
        return Array(try Data(contentsOf: URL(fileURLWithPath: path(name + ".der"))))
    }

    private func write(_ text: String, to file: String) throws {
        try text.write(toFile: path(file), atomically: true, encoding: .utf8)
    }

    private func selfSigned(_ name: String, subject: String) throws {
        try run(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", path(name + ".key"),
                 "-out", path(name + ".pem"), "-days", "1", "-subj", "/CN=\(subject)"])
    }

    private func issue(_ name: String, subject: String, by issuer: String, extensions: String) throws {
        try run(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", path(name + ".key"),
                 "-out", path(name + ".csr"), "-subj", "/CN=\(subject)"])
        try run(["x509", "-req", "-in", path(name + ".csr"), "-CA", path(issuer + ".pem"), "-CAkey", path(issuer + ".key"),
                 "-CAcreateserial", "-out", path(name + ".pem"), "-days", "1", "-extfile", path(extensions)])
    }

    private func run(_ arguments: [String]) throws {
        let result = try runCommand(Self.openssl, arguments)
        if result.status != 0 { throw SidecarError("openssl failed: \(result.stderr)") }
    }
}
