import LatchkeyTestSupport
import Testing

@testable import TokenService

@Suite struct TokenServiceHealthTests {
    @Test func healthReadinessAndMetricsAgainstRealDependencies() async throws {
        try await ServiceHealthExpectations.verify(.tokenService) { settings in
            try buildApplication(
                settings: settings, tokenSettings: TokenServiceHarness.makeSettings(),
                logger: TestServiceSettings.logger)
        }
    }
}
