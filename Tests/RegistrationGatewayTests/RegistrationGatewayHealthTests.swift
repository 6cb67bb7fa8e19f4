import HTTPTypes
import LatchkeyTestSupport
import NIOCore
import PostgresNIO
import Testing

@testable import RegistrationGateway

@Suite struct RegistrationGatewayHealthTests {
    @Test func healthReadinessAndMetricsAgainstRealDependencies() async throws {
        try await ServiceHealthExpectations.verify(.registrationGateway) { settings in
            try buildApplication(
                settings: settings, gateway: GatewayHarness.gatewaySettings(), logger: TestServiceSettings.logger)
        }
    }
}
