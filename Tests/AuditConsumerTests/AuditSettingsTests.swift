import Configuration
import LatchkeyCore
import Testing

@testable import AuditConsumer

@Suite struct AuditSettingsTests {
    static func settings(_ environment: [String: String]) throws -> AuditSettings {
        try AuditSettings(
            reader: ConfigReader(providers: [EnvironmentVariablesProvider(environmentVariables: environment)]))
    }

    @Test func defaultsSuitOneReplica() throws {
        let settings = try Self.settings([:])
        #expect(settings.groupID == "audit-consumer")
        #expect(settings.batchSize == 1_000)
        #expect(settings.batchLinger == .milliseconds(10))
        #expect(settings.maxInFlightBatches == 4)
        #expect(settings.readyMaximumLag == 10_000)
        #expect(settings.platformTenant == nil)
        #expect(settings.adminAudiences == nil)
        #expect(settings.tokenServicePublicURL == "http://127.0.0.1:8082")
    }

    @Test func readsEveryVariable() throws {
        let settings = try Self.settings([
            "AUDIT_BATCH_SIZE": "250", "AUDIT_BATCH_LINGER_MS": "0", "AUDIT_MAX_IN_FLIGHT_BATCHES": "8",
            "AUDIT_READY_MAX_LAG": "500", "AUDIT_LAG_INTERVAL_MS": "2000", "AUDIT_KAFKA_SESSION_TIMEOUT_MS": "6000",
            "AUDIT_KAFKA_HEARTBEAT_INTERVAL_MS": "600", "TOKEN_SERVICE_PUBLIC_URL": "https://login.example.com",
            "PLATFORM_TENANT": "platform", "AUDIT_ADMIN_AUDIENCE": "https://audit.example.com, urn:latchkey:audit",
        ])
        #expect(settings.batchSize == 250)
        #expect(settings.batchLinger == .zero)
        #expect(settings.maxInFlightBatches == 8)
        #expect(settings.readyMaximumLag == 500)
        #expect(settings.lagInterval == .seconds(2))
        #expect(settings.sessionTimeoutMilliseconds == 6_000)
        #expect(settings.heartbeatIntervalMilliseconds == 600)
        #expect(settings.tokenServicePublicURL == "https://login.example.com")
        #expect(settings.platformTenant == TenantSlug(rawValue: "platform"))
        #expect(settings.adminAudiences == ["https://audit.example.com", "urn:latchkey:audit"])
    }

    @Test(arguments: [
        ["AUDIT_BATCH_SIZE": "0"], ["AUDIT_BATCH_SIZE": "many"], ["AUDIT_BATCH_SIZE": "100001"],
        ["AUDIT_MAX_IN_FLIGHT_BATCHES": "-1"], ["AUDIT_READY_MAX_LAG": "1e9"], ["PLATFORM_TENANT": "Not A Slug"],
        ["TOKEN_SERVICE_PUBLIC_URL": "ftp://tokens"],
    ])
    func refusesNonsense(environment: [String: String]) {
        #expect(throws: ConfigurationError.self) { try Self.settings(environment) }
    }
}
