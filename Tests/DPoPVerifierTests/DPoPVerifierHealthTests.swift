import LatchkeyTestSupport
import Shared
import Testing
@testable import DPoPVerifier

@Suite struct DPoPVerifierHealthTests {
    @Test func healthReadinessAndMetricsAgainstRealDependencies() async throws {
        try await ServiceHealthExpectations.verify(.dpopVerifier) { settings in
            try buildApplication(settings: settings, logger: TestServiceSettings.logger)
        }
    }
}
