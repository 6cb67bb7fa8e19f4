import LatchkeyTestSupport
import Shared
import Testing
@testable import AuditConsumer

@Suite struct AuditConsumerHealthTests {
    @Test func healthReadinessAndMetricsAgainstRealDependencies() async throws {
        try await ServiceHealthExpectations.verify(.auditConsumer) { settings in
            try buildApplication(settings: settings, logger: TestServiceSettings.logger)
        }
    }
}
