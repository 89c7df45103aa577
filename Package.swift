// swift-tools-version:6.0
import PackageDescription

/// How the release binary is linked on Linux: with lld, which packs the PIE binary's ~40,000
/// relative relocations into a few kB of DT_RELR (glibc 2.36 or later applies them; the binary
/// names GLIBC_ABI_DT_RELR, so an older glibc refuses it at load instead of misapplying them).
/// The relocation table the loader reads at start was ~1 MB of resident memory. And the code that
/// runs from exec to the first answer is laid out first, in one block (startup-symbols.txt,
/// written by scripts/startup-symbols): the kernel maps file pages in 64 kB runs around each one
/// touched, so start-up code spread over the whole text kept most of the text resident. A symbol
/// the list names that no longer exists is skipped; a stale list only costs memory.
let releaseLinkerFlags = [
    "-use-ld=lld",
    "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
    "-Xlinker", "--symbol-ordering-file=\(Context.packageDirectory)/Sources/fleet-token-proxy/startup-symbols.txt",
    "-Xlinker", "--no-warn-symbol-ordering",
]

let package = Package(
    name: "fleet-token-proxy",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "fleet-token-proxy", targets: ["fleet-token-proxy"]),
        .library(name: "FleetTokenProxy", targets: ["FleetTokenProxy"]),
        // For the fuzz package in Fuzz/ (not part of the product): the parsers' invariants.
        .library(name: "ParserInvariants", targets: ["ParserInvariants"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        // libevent (core, extra, pthreads, OpenSSL bufferevents; the module map names each). Its
        // flags from libevent_core's pkg-config file: libevent_openssl's adds -levent, the
        // all-in-one library that duplicates core and extra, loaded (~130 kB resident) for no use.
        .systemLibrary(
            name: "CEvent",
            pkgConfig: "libevent_core",
            providers: [.apt(["libevent-dev"])]
        ),
        .systemLibrary(
            name: "CNghttp2",
            pkgConfig: "libnghttp2",
            providers: [.apt(["libnghttp2-dev"])]
        ),
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        // zlib, to read gRPC messages sent with grpc-encoding: gzip.
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // Function wrappers for C macros Swift cannot call (OpenSSL's SSL_set_tlsext_host_name...).
        .target(name: "CShims", dependencies: ["CEvent", "COpenSSL"]),
        .target(
            name: "FleetTokenProxy",
            dependencies: [
                "CEvent", "CNghttp2", "COpenSSL", "CShims", "CZlib",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        // Test and demo code, not the product: the stand-in token provider and Fleet Engine,
        // and the demo that runs the sidecar between them.
        .target(
            name: "FleetTokenProxyStandIns",
            dependencies: [
                "FleetTokenProxy", "CEvent", "COpenSSL",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "fleet-token-proxy",
            dependencies: [
                "FleetTokenProxy", "FleetTokenProxyStandIns",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["startup-symbols.txt"],
            linkerSettings: [.unsafeFlags(releaseLinkerFlags, .when(platforms: [.linux], configuration: .release))]
        ),
        // What each parser promises about any input, checked by the fuzz targets (Fuzz/) and by
        // the unit test that replays their seeds and findings. Not part of the product.
        .target(name: "ParserInvariants", dependencies: ["FleetTokenProxy"]),
        // The HTTP/1.1 request parser as a stdin/stdout filter for the differential test
        // against llhttp (Tests/grpc/test_http1_llhttp_differential.py). Not part of the product.
        .executableTarget(name: "http1-parse-probe", dependencies: ["FleetTokenProxy"], path: "Tests/HTTP1ParseProbe"),
        .testTarget(
            name: "FleetTokenProxyTests",
            dependencies: [
                "FleetTokenProxy", "FleetTokenProxyStandIns", "ParserInvariants",
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .testTarget(name: "IntegrationTests", dependencies: ["FleetTokenProxy", "FleetTokenProxyStandIns"]),
    ]
)
