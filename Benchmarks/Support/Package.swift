// swift-tools-version:6.2
import PackageDescription

// What the standalone benchmark packages (audit, gateway) share: environment knobs, errors, child
// processes and percentiles.
let package = Package(
    name: "BenchmarkSupport",
    platforms: [.macOS(.v15)],
    products: [.library(name: "BenchmarkSupport", targets: ["BenchmarkSupport"])],
    dependencies: [.package(url: "https://github.com/apple/swift-log.git", from: "1.16.2")],
    targets: [
        .target(
            name: "BenchmarkSupport",
            dependencies: [.product(name: "Logging", package: "swift-log")],
            path: "Sources/BenchmarkSupport",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        )
    ]
)
