// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "fleet-token-proxy",
    products: [
        .executable(name: "fleet-token-proxy", targets: ["fleet-token-proxy"]),
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
            // The release link of the shipped binary (scripts/build-release) lays out functions by them.
            exclude: ["startup-symbols.txt", "startup-sections.ld"]
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
