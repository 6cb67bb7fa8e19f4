// swift-tools-version:6.2
import PackageDescription

// The audit-consumer benchmark: a load generator and measuring harness that drives the real
// `audit-consumer` binary (built from the main package, a dependency here) against PostgreSQL and
// the embedded Kafka cluster. Kept out of the main package so CI's build stays lean.
let package = Package(
    name: "AuditBenchmark",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Latchkey", path: "../.."),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(path: "../Support"),
    ],
    targets: [
        .executableTarget(
            name: "AuditBenchmark",
            dependencies: [
                .product(name: "LatchkeyCore", package: "Latchkey"),
                .product(name: "LatchkeyKafka", package: "Latchkey"),
                .product(name: "LatchkeyPersistence", package: "Latchkey"),
                .product(name: "BenchmarkSupport", package: "Support"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/AuditBenchmark",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        )
    ]
)
