import LatchkeyTestSupport
import Testing
@testable import TokenService

@Suite struct TokenServiceHealthTests {
    @Test func healthReadinessAndMetricsAgainstRealDependencies() async throws {
        try await ServiceHealthExpectations.verify(.tokenService) { settings in
            try buildApplication(
                settings: settings, tokenSettings: TokenServiceFixture.makeSettings(), logger: TestServiceSettings.logger)
        }
    }
}
