// swift-tools-version:6.2
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InferIsolatedConformances"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

/// One service executable: its folder under Services/, the libraries it needs, and its OpenAPI document
/// (`OpenAPI/<service>.json`, bundled with the service).
func service(_ name: String, folder: String, dependencies: [Target.Dependency]) -> Target {
    .executableTarget(
        name: name,
        dependencies: dependencies,
        path: "Services/\(folder)",
        resources: [.copy("OpenAPI")],
        swiftSettings: swiftSettings
    )
}

/// The tests of one service: real HTTP through Hummingbird's test client.
func serviceTests(_ name: String, extra: [Target.Dependency] = []) -> Target {
    .testTarget(
        name: "\(name)Tests",
        dependencies: extra + [
            .target(name: name),
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
        .library(name: "LatchkeyCore", targets: ["LatchkeyCore"]),
        .library(name: "LatchkeyKafka", targets: ["LatchkeyKafka"]),
        .library(name: "LatchkeyPersistence", targets: ["LatchkeyPersistence"]),
        .library(name: "LatchkeyServer", targets: ["LatchkeyServer"]),
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
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        // OTLP over HTTP only: the gRPC exporter's dependencies are neither resolved nor built.
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
    ],
    targets: [
        // The libraries, lowest layer first (Sources/<target>/); each depends only on targets listed before it.
        // JSON, JOSE and DPoP, models, events and their schemas, the audit chain, the outbound address
        // policy: Foundation and swift-crypto only (scripts/check-layers.py keeps it that way).
        .target(
            name: "LatchkeyCore",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            resources: [.copy("Events/Schemas"), .copy("Passwords/common-passwords.txt")],
            swiftSettings: swiftSettings
        ),
        .systemLibrary(
            name: "CRdKafka",
            pkgConfig: "rdkafka",
            providers: [.apt(["librdkafka-dev"])]
        ),
        // The Kafka client over librdkafka, and the embedded cluster tests and the CLI run.
        .target(
            name: "LatchkeyKafka",
            dependencies: [
                "CRdKafka",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // PostgreSQL: pools, migrations, tenant policy records, the outbox and its relay to Kafka, signing
        // keys, the shared DPoP replay store.
        .target(
            name: "LatchkeyPersistence",
            dependencies: [
                "LatchkeyCore",
                "LatchkeyKafka",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            resources: [.copy("Postgres/Migrations")],
            swiftSettings: swiftSettings
        ),
        // What every service process shares: HTTP middleware and errors, auth, outbound HTTP policy, the
        // service runtime, settings and metrics.
        .target(
            name: "LatchkeyServer",
            dependencies: [
                "LatchkeyCore",
                "LatchkeyKafka",
                "LatchkeyPersistence",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "OTel", package: "swift-otel"),
            ],
            swiftSettings: swiftSettings
        ),
        service(
            "RegistrationGateway", folder: "RegistrationGateway",
            dependencies: [
                "LatchkeyCore",
                "LatchkeyPersistence",
                "LatchkeyServer",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Mustache", package: "swift-mustache"),
            ]),
        service(
            "TokenService", folder: "TokenService",
            dependencies: [
                "LatchkeyCore",
                "LatchkeyPersistence",
                "LatchkeyServer",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]),
        service(
            "DPoPVerifier", folder: "DPoPVerifier",
            dependencies: [
                "LatchkeyCore",
                "LatchkeyKafka",
                "LatchkeyServer",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
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
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]),
        service(
            "AuditConsumer", folder: "AuditConsumer",
            dependencies: [
                "LatchkeyCore",
                "LatchkeyKafka",
                "LatchkeyPersistence",
                "LatchkeyServer",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]),
        .executableTarget(
            name: "LatchkeyCLI",
            dependencies: [
                "LatchkeyCore",
                "LatchkeyKafka",
                "LatchkeyPersistence",
                "LatchkeyServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Yams", package: "Yams"),
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
                "LatchkeyCore",
                "LatchkeyKafka",
                "LatchkeyPersistence",
                "LatchkeyServer",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
            ],
            path: "Tests/LatchkeyTestSupport",
            swiftSettings: swiftSettings
        ),
        // Library tests, one target per layer. LatchkeyCoreTests needs no PostgreSQL and no Kafka.
        .testTarget(
            name: "LatchkeyCoreTests",
            dependencies: [
                "LatchkeyCore",
                "LatchkeyTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LatchkeyKafkaTests",
            dependencies: [
                "LatchkeyKafka",
                "LatchkeyTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LatchkeyPersistenceTests",
            dependencies: [
                "LatchkeyCore",
                "LatchkeyKafka",
                "LatchkeyPersistence",
                "LatchkeyTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LatchkeyServerTests",
            dependencies: [
                "LatchkeyCore",
                "LatchkeyKafka",
                "LatchkeyPersistence",
                "LatchkeyServer",
                "LatchkeyTestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        serviceTests(
            "RegistrationGateway",
            extra: [
                "LatchkeyCore",
                "LatchkeyKafka",
                "LatchkeyPersistence",
                "LatchkeyServer",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        serviceTests(
            "TokenService",
            extra: [
                "LatchkeyCore",
                "LatchkeyKafka",
                "LatchkeyPersistence",
                "LatchkeyServer",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        serviceTests(
            "DPoPVerifier",
            extra: [
                "LatchkeyCore",
                "LatchkeyKafka",
                "LatchkeyServer",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]),
        serviceTests(
            "AuditConsumer", extra: ["LatchkeyCore", "LatchkeyKafka", "LatchkeyPersistence", "LatchkeyServer"]),
        platformTests(
            "SecurityTests",
            extra: [
                "LatchkeyCore", "LatchkeyKafka", "LatchkeyPersistence",
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]),
        platformTests(
            "LatchkeyCLITests",
            extra: ["LatchkeyCore", "LatchkeyKafka", "LatchkeyPersistence"]),
        platformTests(
            "EndToEndTests",
            extra: [
                "LatchkeyCore", "LatchkeyKafka", "LatchkeyPersistence",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ]),
    ]
)
