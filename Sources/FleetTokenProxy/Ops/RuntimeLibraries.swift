import CEvent
import CNghttp2
import COpenSSL

/// The C libraries the process runs with, as each reports itself: the loaded shared library,
/// which a Debian update can change under an unchanged binary, not the headers it was built with.
package struct RuntimeLibraries: Equatable, Sendable {
    package var libevent: String
    package var nghttp2: String
    package var openSSL: String

    package static func loaded() -> RuntimeLibraries {
        RuntimeLibraries(
            libevent: event_get_version().map { String(cString: $0) } ?? "unknown",
            nghttp2: nghttp2_version(0)?.pointee.version_str.map { String(cString: $0) } ?? "unknown",
            // "3.0.19", where OPENSSL_VERSION would add the word OpenSSL and the release date.
            openSSL: OpenSSL_version(Int32(OPENSSL_VERSION_STRING)).map { String(cString: $0) } ?? "unknown")
    }
}
