@testable import FleetTokenProxy
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class SocketActivationParsingTests: XCTestCase {
    func testSocketsStartAtFD3WithTheirNames() throws {
        let sockets = try SocketActivation.sockets(
            environment: ["LISTEN_PID": "42", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "proxy:other"], pid: 42)
        XCTAssertEqual(sockets, [ActivatedSocket(fd: 3, name: "proxy"), ActivatedSocket(fd: 4, name: "other")])
    }

    func testNamesDefaultToUnknown() throws {
        XCTAssertEqual(try SocketActivation.sockets(environment: ["LISTEN_PID": "42", "LISTEN_FDS": "1"], pid: 42),
                       [ActivatedSocket(fd: 3, name: "unknown")])
    }

    func testSocketsForAnotherProcessAreNotOurs() throws {
        XCTAssertEqual(try SocketActivation.sockets(environment: ["LISTEN_PID": "41", "LISTEN_FDS": "1"], pid: 42), [])
    }

    func testNoVariablesMeanNoSockets() throws {
        XCTAssertEqual(try SocketActivation.sockets(environment: [:], pid: 42), [])
        XCTAssertEqual(try SocketActivation.sockets(environment: ["LISTEN_FDS": "1"], pid: 42), [])
    }

    func testMalformedVariablesAreRefused() {
        XCTAssertThrowsError(try SocketActivation.sockets(environment: ["LISTEN_PID": "x", "LISTEN_FDS": "1"], pid: 42))
        XCTAssertThrowsError(try SocketActivation.sockets(environment: ["LISTEN_PID": "42", "LISTEN_FDS": "-1"], pid: 42))
        XCTAssertThrowsError(try SocketActivation.sockets(environment: ["LISTEN_PID": "42", "LISTEN_FDS": "two"], pid: 42))
        XCTAssertThrowsError(try SocketActivation.sockets(environment: ["LISTEN_PID": "42", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "only-one"], pid: 42))
    }

    func testTakingTheSocketsUnsetsTheVariables() throws {
        setenv("LISTEN_PID", "\(getpid())", 1)
        setenv("LISTEN_FDS", "0", 1)
        setenv("LISTEN_FDNAMES", "", 1)
        let environment = ProcessInfo.processInfo.environment
        XCTAssertEqual(try SocketActivation.takeFromEnvironment(environment), [])
        XCTAssertNil(getenv("LISTEN_PID"))
        XCTAssertNil(getenv("LISTEN_FDS"))
        XCTAssertNil(getenv("LISTEN_FDNAMES"))
    }

    func testAPassedFDThatIsNotAListeningSocketIsRefused() throws {
        // fd 3 of this test process is whatever it is, but never a listening socket of ours:
        // check with a descriptor we know is not one (a pipe).
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]); close(fds[1]) }
        XCTAssertFalse(SocketActivation.isListeningStreamSocket(fds[0]))
        let listening = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listening) }
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        _ = withUnsafePointer(to: &sin) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listening, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        XCTAssertFalse(SocketActivation.isListeningStreamSocket(listening), "bound but not listening")
        XCTAssertEqual(listen(listening, 1), 0)
        XCTAssertTrue(SocketActivation.isListeningStreamSocket(listening))
        XCTAssertTrue(SocketActivation.localAddress(of: listening).hasPrefix("127.0.0.1:"), SocketActivation.localAddress(of: listening))
    }

    /// A TCP socket bound to `address` (host byte order), not listening: enough for getsockname.
    private func inetSocket(_ address: UInt32) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_addr.s_addr = address.bigEndian
        _ = withUnsafePointer(to: &sin) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        return fd
    }

    func testAdoptedSocketsOffLoopbackAreRefusedUnlessAllowed() throws {
        let loopback = inetSocket(0x7F00_0001)
        let anywhere = inetSocket(0)
        let unix = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(loopback); close(anywhere); close(unix) }
        let onLoopback = [ActivatedSocket(fd: loopback, name: "a"), ActivatedSocket(fd: unix, name: "u")]
        XCTAssertNoThrow(try SocketActivation.checkLoopback(onLoopback, allowNonLoopback: false))

        let mixed = onLoopback + [ActivatedSocket(fd: anywhere, name: "public")]
        XCTAssertThrowsError(try SocketActivation.checkLoopback(mixed, allowNonLoopback: false)) { error in
            let message = (error as? ConfigError)?.message ?? ""
            XCTAssertTrue(message.contains("(public)") && message.contains("0.0.0.0:") && message.contains("--allow-non-loopback"), message)
        }
        XCTAssertNoThrow(try SocketActivation.checkLoopback(mixed, allowNonLoopback: true))
    }

    func testAdoptedDescriptorThatIsNotASocketIsRefused() {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]); close(fds[1]) }
        XCTAssertThrowsError(try SocketActivation.checkLoopback([ActivatedSocket(fd: fds[0], name: "pipe")], allowNonLoopback: false))
    }
}
