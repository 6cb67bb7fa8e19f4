import Foundation
import Testing

@testable import LatchkeyCore

@Suite struct ModelRoundTripTests {
    static let tenant = TenantSlug(rawValue: "acme")!
    static let created = RFC3339Timestamp.date(from: "2025-01-02T03:04:05.678901Z")!
    static let userID = UUID(uuidString: "0B1C2D3E-4F50-4172-8394-A5B6C7D8E9F0")!

    private func roundTrip<T: Codable & Equatable>(_ value: T) throws -> JSONValue {
        let data = try LatchkeyJSON.encode(value)
        #expect(try LatchkeyJSON.decode(T.self, from: data) == value)
        return try LatchkeyJSON.decode(JSONValue.self, from: data)
    }

    @Test func tenant() throws {
        let tenant = Tenant(
            id: Self.tenant, displayName: "Acme Corp", status: .suspended, createdAt: Self.created, policyVersion: 4,
            branding: TenantBranding(name: "Acme", primaryColor: "#ff0000"))
        let tree = try roundTrip(tenant)
        #expect(
            tree == [
                "id": "acme", "display_name": "Acme Corp", "status": "suspended",
                "created_at": "2025-01-02T03:04:05.678901Z", "policy_version": 4,
                "branding": ["name": "Acme", "primary_color": "#ff0000"],
            ])
        let withoutBranding =
            #"{"id":"acme","display_name":"A","status":"active","created_at":"2025-01-02T03:04:05Z","policy_version":1}"#
        #expect(try LatchkeyJSON.decode(Tenant.self, from: Data(withoutBranding.utf8)).branding == TenantBranding())
        #expect(throws: DecodingError.self) {
            try LatchkeyJSON.decode(
                Tenant.self, from: Data(withoutBranding.replacingOccurrences(of: "active", with: "on").utf8))
        }
    }

    @Test func clientRecord() throws {
        let record = ClientRecord(
            clientID: "c6a1f4d2", tenant: Self.tenant, status: .revoked, clientType: .confidential,
            applicationType: .native, authenticatedUser: Self.userID, templateID: "acme-mobile",
            metadata: ClientMetadata(redirectURIs: ["com.acme.app:/cb"], tokenEndpointAuthMethod: .clientSecretBasic),
            secretExpiresAt: Self.created.addingTimeInterval(3600), createdAt: Self.created,
            updatedAt: Self.created.addingTimeInterval(60), lastUsedAt: Self.created.addingTimeInterval(120),
            registrationMechanism: .userToken)
        let tree = try roundTrip(record)
        #expect(
            Set(tree.objectValue?.keys.map { $0 } ?? []) == [
                "client_id", "tenant", "status", "client_type", "application_type", "authenticated_user", "template_id",
                "metadata", "secret_expires_at", "created_at", "updated_at", "last_used_at", "registration_mechanism",
            ])
        #expect(tree["authenticated_user"] == .string(Self.userID.uuidString))
        #expect(tree["metadata"]?["redirect_uris"] == ["com.acme.app:/cb"])
        #expect(record.id == "c6a1f4d2")

        let staticClient = ClientRecord(
            clientID: "mobile-dcr-client", tenant: Self.tenant, clientType: .public, applicationType: .native,
            metadata: ClientMetadata(tokenEndpointAuthMethod: TokenEndpointAuthMethod.noAuthentication),
            createdAt: Self.created,
            updatedAt: Self.created, registrationMechanism: .admin)
        let staticTree = try roundTrip(staticClient)
        #expect(staticTree["authenticated_user"] == nil && staticTree["secret_expires_at"] == nil)
    }

    @Test func clientRecordUsability() {
        var record = ClientRecord(
            clientID: "c", tenant: Self.tenant, clientType: .confidential, applicationType: .web,
            metadata: ClientMetadata(), secretExpiresAt: Self.created, createdAt: Self.created,
            updatedAt: Self.created, registrationMechanism: .initialAccessToken)
        #expect(record.isUsable(at: Self.created.addingTimeInterval(-1)))
        #expect(!record.isUsable(at: Self.created))
        #expect(record.clientSecretExpiresAtEpochSeconds == Int(Self.created.timeIntervalSince1970))
        record.secretExpiresAt = nil
        #expect(record.isUsable(at: .distantFuture))
        #expect(record.clientSecretExpiresAtEpochSeconds == 0)
        for status in [ClientStatus.revoked, .deleted, .expired] {
            record.status = status
            #expect(!record.isUsable(at: Self.created))
        }
    }

    @Test func user() throws {
        let user = User(
            id: Self.userID, tenant: Self.tenant, username: "jdoe", email: "jdoe@acme.example",
            status: .disabled, createdAt: Self.created)
        let tree = try roundTrip(user)
        #expect(
            tree == [
                "id": .string(Self.userID.uuidString), "tenant": "acme", "username": "jdoe",
                "email": "jdoe@acme.example", "status": "disabled", "created_at": "2025-01-02T03:04:05.678901Z",
            ])
        let federated = User(tenant: Self.tenant, username: "g-1234", createdAt: Self.created)
        #expect(try roundTrip(federated)["email"] == nil)
        #expect(federated.id != User(tenant: Self.tenant, username: "g-1234", createdAt: Self.created).id)
    }

    @Test func externalIdentity() throws {
        let identity = ExternalIdentity(
            tenant: Self.tenant, provider: "google", providerUserID: "1098765", userID: Self.userID)
        #expect(
            try roundTrip(identity) == [
                "tenant": "acme", "provider": "google", "provider_user_id": "1098765",
                "user_id": .string(Self.userID.uuidString),
            ])
    }

    @Test func clientTemplate() throws {
        let template = ClientTemplate(
            id: "acme-mobile", tenant: Self.tenant,
            metadata: ClientMetadata(redirectURIs: ["com.acme.app:/cb"], scope: "openid"),
            overridableFields: ["client_name", "software_version"], version: 2)
        let tree = try roundTrip(template)
        #expect(tree["overridable_fields"] == ["client_name", "software_version"])
        #expect(tree["metadata"]?["scope"] == "openid")
        #expect(tree["version"] == 2)
    }

    @Test func eventActorShorthands() throws {
        #expect(EventActor.user(Self.userID) == EventActor(type: .user, id: Self.userID.uuidString))
        #expect(try roundTrip(EventActor.system("expiry-job")) == ["type": "system", "id": "expiry-job"])
        #expect(throws: DecodingError.self) {
            try LatchkeyJSON.decode(EventActor.self, from: Data(#"{"type":"robot","id":"r"}"#.utf8))
        }
    }
}
