import CNghttp2

/// The version of the nghttp2 the process runs with, and whether that version alone shows the
/// fixes the sidecar relies on. Linking already proves two: `H2Limits.apply` calls the options
/// that came with the rapid-reset (CVE-2023-44487) and CONTINUATION (CVE-2024-28182) fixes, so
/// the binary does not load without them. The third, CVE-2026-27135 (an assertion a peer can
/// reach after a connection error), is in upstream 1.68.1 and in Debian's 1.52.0-1+deb12u3,
/// whose revision a running process cannot see: below 1.68.1 the sidecar warns and relies on the
/// package's `Depends:` for the backport.
struct H2LibraryVersion: Equatable {
    /// As nghttp2 numbers it: 0xMMmmpp.
    let number: UInt32
    let text: String

    /// The first upstream release with every fix the sidecar relies on.
    static let withUpstreamFixes: UInt32 = 0x01_44_01

    /// The library this process loaded (not the headers it was built with).
    static func running() -> H2LibraryVersion {
        guard let info = nghttp2_version(0)?.pointee else { return H2LibraryVersion(number: 0, text: "unknown") }
        return H2LibraryVersion(number: UInt32(info.version_num), text: info.version_str.map { String(cString: $0) } ?? "unknown")
    }

    /// The start-up warning line, or nil when the version itself carries the fixes.
    var warning: String? {
        guard number < Self.withUpstreamFixes else { return nil }
        return "libnghttp2 \(text) is older than 1.68.1: the fix for CVE-2026-27135 must be the distribution's backport (libnghttp2-14 1.52.0-1+deb12u3 or later)"
    }
}
