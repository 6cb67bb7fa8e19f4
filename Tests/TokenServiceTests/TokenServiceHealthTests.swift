import LatchkeyTestSupport
import Shared
import Testing
@testable import TokenService

@Suite struct TokenServiceHealthTests {
    @Test func servesHealthReadinessAndMetricsAgainstRealDependencies() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        defer { cluster.shutdown() }
        let settings = try await TestServiceSettings.make(
            serviceName: "token-service", kafkaBrokers: cluster.bootstrapServers, needsSystemDatabase: true)
        try await ServiceHealthExpectations.expectHealthy(buildApplication(settings: settings, logger: TestServiceSettings.logger))
    }

    @Test func readinessFailsWhenKafkaIsUnreachable() async throws {
        let settings = try await TestServiceSettings.make(
            serviceName: "token-service", kafkaBrokers: ServiceHealthExpectations.unreachableKafka, needsSystemDatabase: true)
        try await ServiceHealthExpectations.expectNotReadyWithoutKafka(
            buildApplication(settings: settings, logger: TestServiceSettings.logger))
    }
}
