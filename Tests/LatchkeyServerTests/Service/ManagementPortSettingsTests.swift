import Configuration
import Foundation
import LatchkeyServer
import Testing

/// Health and metrics listen on their own port: `MANAGEMENT_PORT`, by default the service port + 1000, the
/// port the Kubernetes probes and the ServiceMonitor are declared with.
@Suite struct ManagementPortSettingsTests {
    static let descriptor = ServiceDescriptor(
        name: "test-service", defaultPort: 8089, needsDatabase: false, needsSystemDatabase: false, resources: .main)

    func settings(_ environment: [String: String]) throws -> ServiceSettings {
        let values = ["KAFKA_BROKERS": "127.0.0.1:9"].merging(environment) { _, new in new }
        return try ServiceSettings(
            reader: ConfigReader(providers: [EnvironmentVariablesProvider(environmentVariables: values)]),
            descriptor: Self.descriptor)
    }

    @Test func theManagementPortIsTheServicePortPlus1000UnlessSet() throws {
        let defaults = try settings([:])
        #expect(defaults.port == 8089 && defaults.managementPort == 9089)
        #expect(try settings(["HTTP_PORT": "8082"]).managementPort == 9082)
        #expect(try settings(["HTTP_PORT": "8082", "MANAGEMENT_PORT": "9500"]).managementPort == 9500)
        #expect(try settings(["HTTP_PORT": "0"]).managementPort == 0, "an ephemeral service port, an ephemeral one")
    }

    @Test func theManagementPortMustDifferFromTheServicePort() {
        #expect(throws: (any Error).self) { try settings(["HTTP_PORT": "8082", "MANAGEMENT_PORT": "8082"]) }
    }
}
