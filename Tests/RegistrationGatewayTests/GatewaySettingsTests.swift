import Configuration
import HTTPTypes
import LatchkeyCore
import NIOCore
import PostgresNIO
import Testing

@testable import RegistrationGateway

@Suite struct GatewaySettingsTests {
    @Test func derivesEndpointsAndRefusesBadURLs() throws {
        let settings = try GatewaySettings(
            publicURL: "https://register.example.com/", tokenServicePublicURL: "https://login.example.com",
            secretHasher: GatewayHarness.hasher)
        #expect(settings.registrationEndpoint(tenant: "acme") == "https://register.example.com/t/acme/register")
        #expect(settings.issuer(tenant: "acme") == "https://login.example.com/t/acme")
        for bad in [
            "", "register.example.com", "ftp://x.example.com", "https://x.example.com/?q=1", "https://x.example.com/#f",
        ] {
            #expect(throws: ConfigurationError.self) {
                try GatewaySettings(
                    publicURL: bad, tokenServicePublicURL: "https://login.example.com",
                    secretHasher: GatewayHarness.hasher)
            }
        }
    }

    @Test func readsTheExpiryIntervalFromTheEnvironment() throws {
        func read(_ extra: [String: String]) throws -> GatewaySettings {
            let environment = [
                "REGISTRATION_GATEWAY_PUBLIC_URL": "https://register.example.com",
                "TOKEN_SERVICE_PUBLIC_URL": "https://login.example.com",
                "SECRET_HASH_KEY": KeyMaterial.generateConfigurationValue(),
            ].merging(extra) { $1 }
            return try GatewaySettings(
                reader: ConfigReader(providers: [EnvironmentVariablesProvider(environmentVariables: environment)]))
        }
        #expect(try read([:]).clientExpiryInterval == .seconds(300))
        #expect(try read(["CLIENT_EXPIRY_INTERVAL_SECONDS": "30"]).clientExpiryInterval == .seconds(30))
        for bad in ["0", "-5"] {
            #expect(throws: ConfigurationError.self) { try read(["CLIENT_EXPIRY_INTERVAL_SECONDS": bad]) }
        }
    }
}
