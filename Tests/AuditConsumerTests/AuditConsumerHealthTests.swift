import LatchkeyTestSupport
import Shared
import Testing
@testable import AuditConsumer

@Suite struct AuditConsumerHealthTests {
    @Test func servesHealthReadinessAndMetricsAgainstRealDependencies() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        defer { cluster.shutdown() }
        let settings = try await TestServiceSettings.make(
            serviceName: "audit-consumer", kafkaBrokers: cluster.bootstrapServers, needsSystemDatabase: true)
        try await ServiceHealthExpectations.expectHealthy(buildApplication(settings: settings, logger: TestServiceSettings.logger))
    }

    @Test func readinessFailsWhenKafkaIsUnreachable() async throws {
        let settings = try await TestServiceSettings.make(
            serviceName: "audit-consumer", kafkaBrokers: ServiceHealthExpectations.unreachableKafka, needsSystemDatabase: true)
        try await ServiceHealthExpectations.expectNotReadyWithoutKafka(
            buildApplication(settings: settings, logger: TestServiceSettings.logger))
    }
}
