// swift-tools-version:6.2
import Foundation
import PackageDescription

// The main package is a path dependency; its identity is the name of the folder it is checked out in.
let latchkey = URL(fileURLWithPath: Context.packageDirectory).deletingLastPathComponent().lastPathComponent.lowercased()

/// Every benchmark of Latchkey: load generators and drivers, and the support they share. A package of its
/// own so that the product's build and CI stay lean; `Benchmarks/run.sh <name>` builds (through
/// `bench_build` in `lib.sh`) and runs them.
let swiftSettings: [SwiftSetting] = [.enableUpcomingFeature("ExistentialAny")]

let package = Package(
    name: "LatchkeyBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
    ],
    targets: [
        // Environment knobs, errors, child processes, percentiles and the JSON report of a run.
        .target(
            name: "BenchmarkSupport",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            path: "Sources/BenchmarkSupport",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "SidecarLoad",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "LatchkeyCore", package: latchkey),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Sources/SidecarLoad",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "GrantsLoad",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "LatchkeyCore", package: latchkey),
                .product(name: "LatchkeyPersistence", package: latchkey),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Sources/GrantsLoad",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "AuditBenchmark",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "LatchkeyCore", package: latchkey),
                .product(name: "LatchkeyKafka", package: latchkey),
                .product(name: "LatchkeyPersistence", package: latchkey),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/AuditBenchmark",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "GatewayBenchmark",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "LatchkeyCore", package: latchkey),
                .product(name: "LatchkeyKafka", package: latchkey),
                .product(name: "LatchkeyPersistence", package: latchkey),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            path: "Sources/GatewayBenchmark",
            swiftSettings: swiftSettings
        ),
    ]
)
