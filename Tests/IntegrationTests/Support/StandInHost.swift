import Dispatch
@testable import FleetTokenProxy
@testable import FleetTokenProxyStandIns
import Foundation
import XCTest

/// The loopback stand-ins (token provider, Fleet Engine) on their own event loop thread inside
/// the test process, so a test can change their behaviour and read their counts.
///
/// `@unchecked Sendable`: the stand-in objects are touched only on the loop thread; the test
/// thread reaches them through `sync`, which runs a closure there and waits for it.
final class StandInHost: @unchecked Sendable {
    let loop: EventLoop
    let keyPair: RSAKeyPair
    private(set) var provider: StandInProvider!
    private(set) var fleetEngine: StandInFleetEngine!
    /// Google's credential endpoints, when asked for (`google: true`).
    private(set) var google: StandInGoogle?
    private(set) var googleAddress = ""
    private var servers: [BufferedHTTPServer] = []
    private(set) var providerAddress = ""
    private(set) var fleetEngineAddress = ""
    private var thread: Thread?
    private let stopped = DispatchSemaphore(value: 0)
    /// Every Authorization value the stand-in Fleet Engine saw (for the no-token-in-logs check).
    private(set) var seenAuthorizations: [String] = []
    /// Every request the stand-in Fleet Engine saw.
    private(set) var seenRequests: [HTTPRequest] = []

    /// Starts both stand-ins on ephemeral loopback ports; `tls` serves Fleet Engine over TLS.
    /// With `google`, the stand-in Google too, its account trusted by Fleet Engine (project "p"),
    /// over TLS with `googleTLS`, asking every client for a certificate (mutual TLS).
    init(fleetEngineTLS tls: (cert: String, key: String)? = nil, google withGoogle: Bool = false,
         googleTLS: (cert: String, key: String)? = nil) throws {
        // As the sidecar's main does: a TLS write to a peer that left (the sidecar's start-up
        // HTTP/2 connection, closed when this HTTP/1.1 stand-in declines h2) is an error return.
        signal(SIGPIPE, SIG_IGN)
        loop = try EventLoop()
        keyPair = try RSAKeyPair.generate()
        let clock = SystemClock()
        provider = StandInProvider(keyPair: keyPair, scheduler: loop, wallClock: { clock.wallNow })
        fleetEngine = StandInFleetEngine(publicKey: keyPair.publicKey, keyID: keyPair.keyID,
                                         classify: RESTRoute.classify, wallClock: { clock.wallNow })
        fleetEngine.requestObserver = { [unowned self] request in
            seenRequests.append(request)
            if let auth = request.headers["authorization"] { seenAuthorizations.append(auth) }
        }
        let providerServer = BufferedHTTPServer(loop: loop, handler: provider.handler)
        providerAddress = try providerServer.listen(on: .inet(host: "127.0.0.1", port: 0))
        let tlsContext = try tls.map { try TLSContext.server(certificateFile: $0.cert, keyFile: $0.key) }
        let feServer = BufferedHTTPServer(loop: loop, tls: tlsContext, handler: fleetEngine.handler)
        fleetEngineAddress = try feServer.listen(on: .inet(host: "127.0.0.1", port: 0))
        servers = [providerServer, feServer]
        if withGoogle {
            let account = try StandInServiceAccount(name: "fleet-admin", project: "p")
            let google = StandInGoogle(account: account, scheduler: loop, wallClock: { clock.wallNow })
            let googleContext = try googleTLS.map {
                try TLSContext.server(certificateFile: $0.cert, keyFile: $0.key, requestingClientCertificates: true)
            }
            let googleServer = BufferedHTTPServer(loop: loop, tls: googleContext, handler: google.handler)
            googleAddress = try googleServer.listen(on: .inet(host: "127.0.0.1", port: 0))
            google.tokenURI = "\(googleTLS == nil ? "http" : "https")://\(googleAddress)/token"
            fleetEngine.tokenCheck.trustedKeys.append(account.trustedKey)
            servers.append(googleServer)
            self.google = google
        }
        let loop = self.loop
        let stopped = self.stopped
        let thread = Thread {
            loop.run()
            stopped.signal()
        }
        self.thread = thread
        thread.start()
    }

    /// Serves the stand-in Google on `port` as well (a token endpoint that comes up late).
    func serveGoogle(onPort port: UInt16) throws {
        let google = try XCTUnwrap(google)
        var failure: Error?
        sync {
            let server = BufferedHTTPServer(loop: self.loop, handler: google.handler)
            do {
                _ = try server.listen(on: .inet(host: "127.0.0.1", port: port))
                self.servers.append(server)
            } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// Serves a stand-in EC2 instance metadata service on its own loopback port.
    func serveAWS() throws -> (aws: StandInAWS, address: String) {
        var result: Result<(StandInAWS, String), Error>!
        sync {
            let aws = StandInAWS()
            let server = BufferedHTTPServer(loop: self.loop, handler: aws.handler)
            do {
                let address = try server.listen(on: .inet(host: "127.0.0.1", port: 0))
                self.servers.append(server)
                result = .success((aws, address))
            } catch { result = .failure(error) }
        }
        return try result.get()
    }

    var providerTemplate: String { "http://\(providerAddress)/token/{provider}/{type}/{id}" }

    /// Runs `body` on the loop thread and returns its result.
    func sync<T>(_ body: @escaping () -> T) -> T {
        let done = DispatchSemaphore(value: 0)
        let box = ResultBox<T>()
        let work = UncheckedBox(body)
        loop.execute { [box] in
            box.value = work.value()
            done.signal()
        }
        done.wait()
        return box.value!
    }

    func stop() {
        sync { self.servers.forEach { $0.close() } }
        loop.stop()
        stopped.wait()
    }
}

/// Carries a value from the loop thread to the waiting test thread.
/// `@unchecked Sendable`: written once before a semaphore signal, read after the wait.
final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}

/// Hands a loop-thread closure across threads; it only ever runs on the loop thread.
struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
