import Foundation
import Testing

@testable import LatchkeyCore

@Suite struct LatchkeyEventTypeTests {
    @Test func typesTopicsAndSchemaFilesMatchTheContract() {
        let expected: [(LatchkeyEventType, String, String)] = [
            (.clientRegistered, "io.latchkey.client.registered.v1", "latchkey.client-registered"),
            (.tokenIssued, "io.latchkey.token.issued.v1", "latchkey.token-issued"),
            (.clientRevoked, "io.latchkey.client.revoked.v1", "latchkey.client-revoked"),
            (.clientUpdated, "io.latchkey.client.updated.v1", "latchkey.client-updated"),
            (.userRegistered, "io.latchkey.user.registered.v1", "latchkey.user-registered"),
            (.tokenRevoked, "io.latchkey.token.revoked.v1", "latchkey.token-revoked"),
            (
                .refreshTokenReuseDetected, "io.latchkey.refresh_token.reuse_detected.v1",
                "latchkey.refresh-token-reuse-detected"
            ),
            (.userDisabled, "io.latchkey.user.disabled.v1", "latchkey.user-disabled"),
            (.userPasswordChanged, "io.latchkey.user.password_changed.v1", "latchkey.user-password-changed"),
        ]
        #expect(LatchkeyEventType.userEnabled.cloudEventType == "io.latchkey.user.enabled.v1")
        #expect(LatchkeyEventType.userEnabled.topic() == "latchkey.user-disabled")
        #expect(expected.count + 1 == LatchkeyEventType.allCases.count)
        for (type, ceType, topic) in expected {
            #expect(type.cloudEventType == ceType)
            #expect(type.topic() == topic)
            #expect(type.schemaFileName == ceType + ".schema.json")
            #expect(LatchkeyEventType(topic: topic) == type)
            #expect(LatchkeyEventType(topic: "prod-" + topic.dropFirst("latchkey.".count), prefix: "prod-") == type)
        }
        #expect(LatchkeyEventType(topic: "latchkey.nothing") == nil)
        #expect(LatchkeyEventType(topic: "other.client-registered") == nil)
        #expect(LatchkeyEventType.allTopics().count == expected.count)
        #expect(Set(LatchkeyEventType.allTopics()).count == expected.count)
    }

    @Test func payloadTypesDeclareTheirEventType() {
        #expect(ClientRegistered.eventType == .clientRegistered)
        #expect(TokenIssued.eventType == .tokenIssued)
        #expect(ClientRevoked.eventType == .clientRevoked)
        #expect(ClientUpdated.eventType == .clientUpdated)
        #expect(UserRegistered.eventType == .userRegistered)
        #expect(TokenRevoked.eventType == .tokenRevoked)
        #expect(RefreshTokenReuseDetected.eventType == .refreshTokenReuseDetected)
        #expect(UserDisabled.eventType == .userDisabled)
        #expect(UserEnabled.eventType == .userEnabled)
    }

    @Test func kafkaKeysRoundTrip() throws {
        let tenant = try #require(TenantSlug(rawValue: "acme"))
        let key = LatchkeyEventType.kafkaKey(tenant: tenant, clientID: "c/1")
        #expect(key == "acme/c/1")
        let parsed = try #require(LatchkeyEventType.parseKafkaKey(key))
        #expect(parsed.tenant == tenant && parsed.clientID == "c/1")
        #expect(LatchkeyEventType.parseKafkaKey("ACME/c1") == nil)
        #expect(LatchkeyEventType.parseKafkaKey("acme/") == nil)
        #expect(LatchkeyEventType.parseKafkaKey("acme") == nil)
    }

    @Test func unknownTypeStringsFailWithTheAcceptedList() throws {
        let error = try #require(throws: DecodingError.self) {
            try LatchkeyJSON.decode(LatchkeyEventType.self, from: Data(#""io.latchkey.client.created.v1""#.utf8))
        }
        #expect(error.readableDescription.contains(#"unknown event type "io.latchkey.client.created.v1""#))
        #expect(error.readableDescription.contains(#""io.latchkey.token.issued.v1""#))
    }
}
