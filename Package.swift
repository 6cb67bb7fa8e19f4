// swift-tools-version:6.2
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InferIsolatedConformances"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

/// One service executable: its folder under Services/ and the libraries it needs.
func service(_ name: String, folder: String, extra: [Target.Dependency] = []) -> Target {
    .executableTarget(
        name: name,
        dependencies: extra + [
            "Shared",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "Configuration", package: "swift-configuration"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
        ],
        path: "Services/\(folder)",
        swiftSettings: swiftSettings
    )
}

/// The tests of one service: real HTTP through Hummingbird's test client.
func serviceTests(_ name: String, extra: [Target.Dependency] = []) -> Target {
    .testTarget(
        name: "\(name)Tests",
        dependencies: extra + [
            .target(name: name),
            "Shared",
            "LatchkeyTestSupport",
            .product(name: "HummingbirdTesting", package: "hummingbird"),
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
        ],
        path: "Tests/\(name)Tests",
        swiftSettings: swiftSettings
    )
}

/// Tests that run the whole platform as processes and drive it with the demo client of `LatchkeyCLI`.
func platformTests(_ name: String, extra: [Target.Dependency] = []) -> Target {
    .testTarget(
        name: name,
        dependencies: extra + [
            "Shared",
            "LatchkeyCLI",
            "LatchkeyTestSupport",
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "NIOCore", package: "swift-nio"),
        ],
        path: "Tests/\(name)",
        swiftSettings: swiftSettings
    )
}

let package = Package(
    name: "Latchkey",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "registration-gateway", targets: ["RegistrationGateway"]),
        .executable(name: "token-service", targets: ["TokenService"]),
        .executable(name: "dpop-verifier", targets: ["DPoPVerifier"]),
        .executable(name: "audit-consumer", targets: ["AuditConsumer"]),
        .executable(name: "latchkey", targets: ["LatchkeyCLI"]),
        .executable(name: "demo-api", targets: ["DemoAPI"]),
        .library(name: "Shared", targets: ["Shared"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
    ],
    targets: [
        .systemLibrary(
            name: "CRdKafka",
            path: "Shared/CRdKafka",
            pkgConfig: "rdkafka",
            providers: [.apt(["librdkafka-dev"])]
        ),
        .target(
            name: "Shared",
            dependencies: [
                "CRdKafka",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
            ],
            path: "Shared",
            exclude: ["CRdKafka"],
            resources: [.copy("Events/Schemas"), .copy("Postgres/Migrations"), .copy("HTTP/OpenAPI")],
            swiftSettings: swiftSettings
        ),
        service(
            "RegistrationGateway", folder: "RegistrationGateway",
            extra: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Mustache", package: "swift-mustache"),
            ]),
        service(
            "TokenService", folder: "TokenService",
            extra: [
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]),
        service(
            "DPoPVerifier", folder: "DPoPVerifier",
            extra: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]),
        service("AuditConsumer", folder: "AuditConsumer"),
        .executableTarget(
            name: "LatchkeyCLI",
            dependencies: [
                "Shared",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Services/LatchkeyCLI",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "DemoAPI",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Examples/DemoAPI",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "LatchkeyTestSupport",
            dependencies: [
                "Shared",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Tests/LatchkeyTestSupport",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "SharedTests",
            dependencies: [
                "Shared",
                "LatchkeyTestSupport",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Tests/SharedTests",
            swiftSettings: swiftSettings
        ),
        serviceTests(
            "RegistrationGateway",
            extra: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        serviceTests(
            "TokenService",
            extra: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        serviceTests(
            "DPoPVerifier",
            extra: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]),
        serviceTests("AuditConsumer"),
        platformTests("SecurityTests", extra: [.product(name: "NIOHTTP1", package: "swift-nio")]),
        platformTests("EndToEndTests", extra: [
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "HummingbirdTesting", package: "hummingbird"),
        ]),
    ]
)
