import LatchkeyTestSupport
import Shared
import Testing
@testable import RegistrationGateway

@Suite struct RegistrationGatewayHealthTests {
    @Test func servesHealthReadinessAndMetricsAgainstRealDependencies() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        defer { cluster.shutdown() }
        let settings = try await TestServiceSettings.make(
            serviceName: "registration-gateway", kafkaBrokers: cluster.bootstrapServers, needsSystemDatabase: true)
        try await ServiceHealthExpectations.expectHealthy(buildApplication(settings: settings, logger: TestServiceSettings.logger))
    }

    @Test func readinessFailsWhenKafkaIsUnreachable() async throws {
        let settings = try await TestServiceSettings.make(
            serviceName: "registration-gateway", kafkaBrokers: ServiceHealthExpectations.unreachableKafka, needsSystemDatabase: true)
        try await ServiceHealthExpectations.expectNotReadyWithoutKafka(
            buildApplication(settings: settings, logger: TestServiceSettings.logger))
    }
}
