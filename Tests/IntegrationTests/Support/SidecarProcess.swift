import Foundation
import XCTest

/// The real `fleet-token-proxy` binary run as a child process, its stderr captured.
///
/// `@unchecked Sendable`: the captured log is appended from the pipe's handler thread and read
/// from the test thread, always under `logLock`.
final class SidecarProcess: @unchecked Sendable {
    let process = Process()
    private let stderrPipe = Pipe()
    private let logLock = NSLock()
    private var logData = Data()
    private(set) var address = ""

    /// The binary `swift build` put beside the test bundle (or FLEET_TOKEN_PROXY_BIN).
    static var binary: URL {
        if let path = ProcessInfo.processInfo.environment["FLEET_TOKEN_PROXY_BIN"] { return URL(fileURLWithPath: path) }
        var dir = Bundle(for: SidecarProcess.self).bundleURL
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent("fleet-token-proxy")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        return Bundle.main.bundleURL.appendingPathComponent("fleet-token-proxy")
    }

    /// Starts `serve` with `arguments` (listening on an ephemeral loopback port unless the
    /// arguments say otherwise) and waits until it reports its address.
    init(_ arguments: [String], environment: [String: String] = [:], waitForListening: Bool = true) throws {
        process.executableURL = Self.binary
        var args = ["serve"]
        if !arguments.contains("--listen") && environment["FLEET_TOKEN_PROXY_LISTEN"] == nil { args += ["--listen", "127.0.0.1:0"] }
        process.arguments = args + arguments
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("FLEET_TOKEN_PROXY_") }
        env.merge(environment) { $1 }
        process.environment = env
        process.standardError = stderrPipe
        process.standardOutput = FileHandle.nullDevice
        stderrPipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            self.logLock.lock()
            self.logData.append(data)
            self.logLock.unlock()
        }
        try process.run()
        guard waitForListening else { return }
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let range = log.range(of: #"address=(\S+)"#, options: .regularExpression) {
                address = String(log[range].dropFirst("address=".count))
                return
            }
            if !process.isRunning { break }
            usleep(20_000)
        }
        throw SidecarError("sidecar did not start: \(log)")
    }

    var log: String {
        logLock.lock()
        defer { logLock.unlock() }
        return String(decoding: logData, as: UTF8.self)
    }

    var baseURL: String { "http://\(address)" }

    /// SIGTERM, then wait for the exit status.
    @discardableResult
    func stop() -> Int32 {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        usleep(50_000) // let the last stderr bytes arrive
        return process.terminationStatus
    }

    deinit { if process.isRunning { process.terminate() } }
}

struct SidecarError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Runs a command to completion; returns status, stdout and stderr.
@discardableResult
func runCommand(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    // Read both pipes to the end before waiting, so a large output cannot block the child.
    let group = DispatchGroup()
    let outBox = ResultBox<Data>(), errBox = ResultBox<Data>()
    DispatchQueue.global().async(group: group) { outBox.value = out.fileHandleForReading.readDataToEndOfFile() }
    DispatchQueue.global().async(group: group) { errBox.value = err.fileHandleForReading.readDataToEndOfFile() }
    group.wait()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: outBox.value ?? Data(), as: UTF8.self),
            String(decoding: errBox.value ?? Data(), as: UTF8.self))
}

/// curl, which this project did not write, as the client.
func curl(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
    try runCommand("/usr/bin/curl", ["-sS", "--max-time", "20"] + arguments)
}
