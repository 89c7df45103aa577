import CShims

/// Which build this binary is, for `--version` and `fleet_token_proxy_build_info`: a bug report
/// names the build it came from. The version is defined here only (scripts/package reads it); the
/// revision and the toolchain are stamped by scripts/build-release (`Sources/CShims/BuildStamp.c`)
/// and are "unknown" in a build that was not made by it, such as one from a source tarball.
package enum BuildInfo {
    /// The release version (the package adds `+git<date>.<commit>` to it).
    package static let version = "0.1.0"

    /// The git commit, abbreviated, with `-dirty` when the tree had uncommitted changes; or "unknown".
    package static var revision: String { String(cString: fte_build_revision()) }

    /// The toolchain's own version (6.3.1), or, without a stamp, the compiler's as far as the
    /// source can tell (6.3).
    package static var swiftVersion: String {
        let stamped = String(cString: fte_build_swift_version())
        return stamped == "unknown" ? compilerVersion : stamped
    }

    private static var compilerVersion: String {
        #if compiler(>=7.0)
        return "7.0 or later"
        #elseif compiler(>=6.3)
        return "6.3"
        #elseif compiler(>=6.2)
        return "6.2"
        #elseif compiler(>=6.1)
        return "6.1"
        #else
        return "6.0"
        #endif
    }
}
