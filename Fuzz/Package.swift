// swift-tools-version:6.0
// The libFuzzer targets: one executable per parser, each checking that parser's invariants
// (Sources/ParserInvariants). Built only by scripts/fuzz, with -sanitize=fuzzer over every
// module so the parsers are instrumented; the product build never sees this package.
import PackageDescription

let names = [
    "request-head", "response-head", "chunked-body", "grpc-first-message",
    "rest-route", "provider-answer", "header-file", "service-account-key", "h2-response-head",
    "access-token-answer", "adc-file", "sign-jwt-answer", "id-token-answer", "h2-request-head",
    "generate-access-token-answer", "subject-token", "executable-response", "aws-credentials-answer",
    "certificate-config",
]

let package = Package(
    name: "fleet-token-proxy-fuzz",
    dependencies: [.package(name: "fleet-token-proxy", path: "..")],
    targets: [
        .target(name: "CLibFuzzer", path: "Driver/CLibFuzzer"),
        .target(name: "LibFuzzerDriver", dependencies: ["CLibFuzzer"], path: "Driver/LibFuzzerDriver"),
    ] + names.map { name in
        .executableTarget(
            name: "fuzz-\(name)",
            dependencies: ["LibFuzzerDriver", .product(name: "ParserInvariants", package: "fleet-token-proxy")],
            path: "Targets/\(name)"
        )
    }
)
