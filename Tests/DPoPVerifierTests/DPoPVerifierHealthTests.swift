import LatchkeyTestSupport
import Shared
import Testing
@testable import DPoPVerifier

@Suite struct DPoPVerifierHealthTests {
    @Test func servesHealthReadinessAndMetricsAgainstRealDependencies() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        defer { cluster.shutdown() }
        let settings = try await TestServiceSettings.make(
            serviceName: "dpop-verifier", kafkaBrokers: cluster.bootstrapServers, needsSystemDatabase: false)
        try await ServiceHealthExpectations.expectHealthy(buildApplication(settings: settings, logger: TestServiceSettings.logger))
    }

    @Test func readinessFailsWhenKafkaIsUnreachable() async throws {
        let settings = try await TestServiceSettings.make(
            serviceName: "dpop-verifier", kafkaBrokers: ServiceHealthExpectations.unreachableKafka, needsSystemDatabase: false)
        try await ServiceHealthExpectations.expectNotReadyWithoutKafka(
            buildApplication(settings: settings, logger: TestServiceSettings.logger))
    }
}
