import Foundation
import Testing

@testable import LatchkeyCore

@Suite struct ClientTemplateTests {
    static let template = ClientTemplate(
        id: "acme-mobile", tenant: TenantSlug(rawValue: "acme")!,
        metadata: ClientMetadata(
            redirectURIs: ["com.acme.app:/cb"], tokenEndpointAuthMethod: .clientSecretBasic,
            grantTypes: [.authorizationCode, .refreshToken], clientName: "Acme", scope: "openid profile",
            applicationType: .native, dpopBoundAccessTokens: true),
        overridableFields: ["client_name", "contacts"], version: 3)

    @Test func instanceCopiesTheTemplateAndAppliesAllowedOverrides() throws {
        let request = ClientMetadata(
            clientName: "Acme on Jane's phone", softwareID: "acme-mobile", softwareVersion: "4.2.0",
            softwareStatement: "a.b.c")
        let instance = try Self.template.instanceMetadata(for: request)
        #expect(instance.clientName == "Acme on Jane's phone")
        #expect(instance.redirectURIs == ["com.acme.app:/cb"])
        #expect(instance.scope == "openid profile")
        #expect(instance.dpopBoundAccessTokens == true)
        #expect(instance.softwareID == "acme-mobile")
        #expect(instance.softwareVersion == "4.2.0")
        #expect(instance.softwareStatement == nil)
        #expect(instance.contacts == nil)
    }

    @Test func onlySoftwareIDGivesTheTemplateItself() throws {
        var expected = Self.template.metadata
        expected.softwareID = "acme-mobile"
        #expect(try Self.template.instanceMetadata(for: ClientMetadata(softwareID: "acme-mobile")) == expected)
    }

    @Test func membersTheTemplateDoesNotReleaseAreRefused() throws {
        let request = ClientMetadata(
            redirectURIs: ["https://evil.example/cb"], clientName: "x", scope: "openid admin", softwareID: "acme-mobile"
        )
        #expect(Self.template.disallowedOverrides(in: request) == ["redirect_uris", "scope"])
        let error = try #require(throws: ClientTemplateError.self) { try Self.template.instanceMetadata(for: request) }
        #expect(error == .notOverridable(["redirect_uris", "scope"]))
        #expect(error.description == "the template does not allow setting: redirect_uris, scope")
    }

    @Test func anotherSoftwareIDIsRefused() {
        #expect(throws: ClientTemplateError.softwareIDMismatch("globex-app")) {
            try Self.template.instanceMetadata(for: ClientMetadata(softwareID: "globex-app"))
        }
    }

    @Test func unknownOverridableFieldsAreReported() {
        var template = Self.template
        template.overridableFields = ["client_name", "colour"]
        #expect(template.unknownOverridableFields == ["colour"])
        #expect(Self.template.unknownOverridableFields.isEmpty)
    }
}
