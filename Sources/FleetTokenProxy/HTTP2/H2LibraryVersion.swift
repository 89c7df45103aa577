import CNghttp2

/// The nghttp2 the process runs with and whether it stops the attacks the sidecar relies on it
/// to stop, as the library itself answers (`H2LibraryProbe`), not as its version suggests:
/// Debian 12's 1.52.0-1+deb12u3 carries the fixes of upstream 1.57, 1.61 and 1.68.1 under the
/// version 1.52.0. Linking already requires two of them (`H2Limits.apply` calls the options that
/// came with the rapid-reset and CONTINUATION fixes); the probe shows they act, and shows the
/// third (CVE-2026-27135), which added no symbol.
struct H2LibraryVersion: Equatable {
    /// As nghttp2 numbers it: 0xMMmmpp.
    let number: UInt32
    let text: String
    /// What the library did when probed.
    let protections: H2LibraryProbe.Outcome

    /// The library this process loaded (not the headers it was built with), probed.
    static func running() -> H2LibraryVersion {
        let protections = H2LibraryProbe.run()
        guard let info = nghttp2_version(0)?.pointee else { return H2LibraryVersion(number: 0, text: "unknown", protections: protections) }
        return H2LibraryVersion(number: UInt32(info.version_num), text: info.version_str.map { String(cString: $0) } ?? "unknown",
                                protections: protections)
    }

    /// The start-up warning line, or nil when every protection held: a warning that is always
    /// there teaches operators to ignore warnings.
    var warning: String? {
        let missing = protections.missing
        guard !missing.isEmpty else { return nil }
        return "libnghttp2 \(text) does not stop \(missing.joined(separator: ", ")) when asked: "
            + "install a fixed libnghttp2 (Debian 12: libnghttp2-14 1.52.0-1+deb12u3 or later; upstream 1.68.1 or later)"
    }
}
