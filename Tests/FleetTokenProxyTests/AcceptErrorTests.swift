@testable import FleetTokenProxy
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Prometheus
import XCTest

/// A failed accept's errno as the metric's bounded reason; the metric's series are there from
/// the start; descriptors are counted even when none is left to count them with.
final class AcceptErrorTests: XCTestCase {
    func testErrnoBecomesABoundedReason() {
        XCTAssertEqual(AcceptError(errno: EMFILE).reason, .emfile)
        XCTAssertEqual(AcceptError(errno: ENFILE).reason, .enfile)
        XCTAssertEqual(AcceptError(errno: ENOBUFS).reason, .enobufs)
        XCTAssertEqual(AcceptError(errno: ENOMEM).reason, .enomem)
        XCTAssertEqual(AcceptError(errno: EPERM).reason, .other)
        XCTAssertEqual(AcceptError(errno: EMFILE).message, "Too many open files")
    }

    func testEveryReasonIsOnTheMetricsPageAtZeroAndCounts() {
        let metrics = ProxyMetrics(registry: PrometheusCollectorRegistry())
        metrics.acceptFailed(.emfile)
        metrics.acceptFailed(.emfile)
        let text = String(decoding: metrics.exposition(), as: UTF8.self)
        XCTAssertTrue(text.contains(#"fleet_token_proxy_accept_errors_total{reason="emfile"} 2"#), text)
        for reason in ["enfile", "enobufs", "enomem", "other"] {
            XCTAssertTrue(text.contains(#"fleet_token_proxy_accept_errors_total{reason="\#(reason)"} 0"#), text)
        }
        XCTAssertTrue(text.contains("# HELP fleet_token_proxy_accept_errors_total "), text)
    }

    func testDescriptorsAreCountedAndTheLimitRead() throws {
        let usage = DescriptorUsage()
        let before = try XCTUnwrap(usage.open())
        let extra = (0..<5).map { _ in Glibc.open("/dev/null", O_RDONLY) }
        defer { extra.forEach { Glibc.close($0) } }
        XCTAssertEqual(usage.open(), before + 5)
        var rl = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &rl)
        XCTAssertEqual(DescriptorUsage.limit(), rl.rlim_cur == rlim_t.max ? nil : UInt64(rl.rlim_cur))
    }

    func testDescriptorsAreCountedWhenNoneIsLeftToCountThemWith() throws {
        let usage = DescriptorUsage()
        let nofile = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        var saved = rlimit()
        XCTAssertEqual(getrlimit(nofile, &saved), 0)
        let highest = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").compactMap { Int32($0) }.max())
        var tight = saved
        tight.rlim_cur = rlim_t(highest + 1)
        XCTAssertEqual(setrlimit(nofile, &tight), 0)
        var filler: [Int32] = []
        defer {
            filler.forEach { Glibc.close($0) }
            setrlimit(nofile, &saved)
        }
        while true {
            let fd = Glibc.open("/dev/null", O_RDONLY)
            guard fd >= 0 else { break }
            filler.append(fd)
        }
        XCTAssertEqual(errno, EMFILE, "every descriptor below the limit is taken")
        XCTAssertEqual(usage.open(), Int(highest) + 1, "counted with the reserve")
        XCTAssertEqual(Glibc.open("/dev/null", O_RDONLY), -1, "the reserve is held again")
    }
}
