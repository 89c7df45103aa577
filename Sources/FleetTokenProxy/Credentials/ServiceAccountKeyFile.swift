#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a `--signer key-file:PATH` file (docs/CONTRACT.md §4a) at start and on SIGHUP. A key
/// file is a secret: one open to its group or to others is refused, as ssh refuses such a
/// private key, and the mode is read from the open file so the check and the read are of the
/// same file.
enum ServiceAccountKeyFile {
    /// More than any key file Google issues (about 2.4 kB).
    static let maximumBytes = 64 * 1024

    /// The key and a credential that signs with it; every refusal is one line that names the
    /// file and what is wrong with it, never its contents.
    package static func load(_ path: String) throws(ConfigError) -> SigningCredential {
        let key = try readKey(path)
        do {
            return try SigningCredential(key)
        } catch {
            throw ConfigError("key file \(path): \(error.message)")
        }
    }

    static func readKey(_ path: String) throws(ConfigError) -> ServiceAccountKey {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else { throw ConfigError("key file \(path) cannot be read (\(String(cString: strerror(errno))))") }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            throw ConfigError("key file \(path) is not a regular file")
        }
        let open = status.st_mode & 0o077
        guard open == 0 else {
            let mode = String(status.st_mode & 0o777, radix: 8)
            throw ConfigError("key file \(path) is open to group or others (mode 0\(mode)); a private key must be its owner's only: chmod 600 it")
        }
        var bytes = [UInt8](repeating: 0, count: maximumBytes + 1)
        var count = 0
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + count, $0.count - count) }
            if got < 0 && errno == EINTR { continue }
            guard got >= 0 else { throw ConfigError("key file \(path) cannot be read (\(String(cString: strerror(errno))))") }
            if got == 0 { break }
            count += got
        }
        guard count <= maximumBytes else { throw ConfigError("key file \(path) is larger than \(maximumBytes) bytes") }
        switch ServiceAccountKey.parse(Array(bytes[..<count])) {
        case .success(let key): return key
        case .failure(let error): throw ConfigError("key file \(path) \(error.message)")
        }
    }
}
