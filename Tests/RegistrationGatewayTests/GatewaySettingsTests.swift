import PostgresNIO
import NIOCore
import HTTPTypes
import Shared
import Testing
@testable import RegistrationGateway

@Suite struct GatewaySettingsTests {
    @Test func derivesEndpointsAndRefusesBadURLs() throws {
        let settings = try GatewaySettings(
            publicURL: "https://register.example.com/", tokenServicePublicURL: "https://login.example.com",
            secretHasher: GatewayTestHarness.hasher)
        #expect(settings.registrationEndpoint(tenant: "acme") == "https://register.example.com/t/acme/register")
        #expect(settings.issuer(tenant: "acme") == "https://login.example.com/t/acme")
        for bad in ["", "register.example.com", "ftp://x.example.com", "https://x.example.com/?q=1", "https://x.example.com/#f"] {
            #expect(throws: ConfigurationError.self) {
                try GatewaySettings(publicURL: bad, tokenServicePublicURL: "https://login.example.com", secretHasher: GatewayTestHarness.hasher)
            }
        }
    }
}
