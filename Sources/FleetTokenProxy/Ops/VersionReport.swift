/// What `fleet-token-proxy --version` prints: the build on the first line (what a script wants),
/// then the toolchain and the libraries it runs with, one `name version` a line.
package struct VersionReport: Equatable, Sendable {
    package var version: String
    package var revision: String
    package var swift: String
    package var libraries: RuntimeLibraries

    package static func current() -> VersionReport {
        VersionReport(version: BuildInfo.version, revision: BuildInfo.revision, swift: BuildInfo.swiftVersion,
                      libraries: .loaded())
    }

    package var text: String {
        """
        fleet-token-proxy \(version) (revision \(revision))
        swift \(swift)
        libevent \(libraries.libevent)
        nghttp2 \(libraries.nghttp2)
        openssl \(libraries.openSSL)
        """
    }
}
