import Foundation
import Testing

@testable import LatchkeyCore

@Suite struct ClientMetadataTests {
    static let full = ClientMetadata(
        redirectURIs: ["com.acme.mobile:/callback", "http://127.0.0.1/callback"],
        tokenEndpointAuthMethod: .privateKeyJWT, grantTypes: [.authorizationCode, .refreshToken],
        responseTypes: [.code], clientName: "Acme Mobile", clientURI: "https://acme.example",
        logoURI: "https://acme.example/logo.png", scope: "openid profile", contacts: ["ops@acme.example"],
        tosURI: "https://acme.example/tos", policyURI: "https://acme.example/privacy", jwksURI: nil,
        jwks: ["keys": [["kty": "EC", "crv": "P-256", "x": "abc", "y": "def"]]], softwareID: "acme-mobile",
        softwareVersion: "4.2.0", applicationType: .native, dpopBoundAccessTokens: true,
        softwareStatement: "eyJhbGciOiJFUzI1NiJ9.e30.sig", postLogoutRedirectURIs: ["com.acme.mobile:/logout"])

    @Test func decodesTheSeedRegistrationRequestIgnoringUnknownMembers() throws {
        // A full RFC 7591 registration request, with the members Latchkey does not define.
        let json = """
            {"redirect_uris": ["io.curity.dcrclient:/callback"],
             "post_logout_redirect_uris": ["io.curity.dcrclient:/logoutcallback"],
             "application_type": "native", "grant_types": ["authorization_code", "refresh_token"],
             "scope": "openid profile",
             "default_acr_values": ["urn:se:curity:authentication:html-form:Username-Password"],
             "id_token_signed_response_alg": "RS256", "subject_type": "public",
             "client_name#ja-Jpan-JP": "クライアント名", "x_vendor": {"nested": [1, 2]}}
            """
        let metadata = try LatchkeyJSON.decode(ClientMetadata.self, from: Data(json.utf8))
        #expect(metadata.redirectURIs == ["io.curity.dcrclient:/callback"])
        #expect(metadata.postLogoutRedirectURIs == ["io.curity.dcrclient:/logoutcallback"])
        #expect(metadata.applicationType == .native)
        #expect(metadata.grantTypes == [.authorizationCode, .refreshToken])
        #expect(metadata.scope == "openid profile")
        #expect(metadata.tokenEndpointAuthMethod == nil)
        let reencoded = try LatchkeyJSON.decode(JSONValue.self, from: LatchkeyJSON.encode(metadata))
        #expect(reencoded["default_acr_values"] == nil && reencoded["x_vendor"] == nil)
    }

    @Test func roundTripsEveryMemberExceptTheInputOnlyStatement() throws {
        let data = try LatchkeyJSON.encode(Self.full)
        let tree = try LatchkeyJSON.decode(JSONValue.self, from: data)
        #expect(tree["software_statement"] == nil, "software_statement is input only")
        #expect(tree["token_endpoint_auth_method"] == "private_key_jwt")
        #expect(tree["dpop_bound_access_tokens"] == true)
        #expect(tree["post_logout_redirect_uris"] == ["com.acme.mobile:/logout"])
        var expected = Self.full
        expected.softwareStatement = nil
        #expect(try LatchkeyJSON.decode(ClientMetadata.self, from: data) == expected)
    }

    @Test func encodingOmitsAbsentMembers() throws {
        let data = try LatchkeyJSON.encode(ClientMetadata(redirectURIs: ["com.acme.app:/cb"]))
        #expect(String(decoding: data, as: UTF8.self) == #"{"redirect_uris":["com.acme.app:/cb"]}"#)
        #expect(try LatchkeyJSON.decode(ClientMetadata.self, from: Data("{}".utf8)) == ClientMetadata())
        #expect(try LatchkeyJSON.decode(ClientMetadata.self, from: Data(#"{"jwks":null}"#.utf8)).jwks == nil)
    }

    @Test func softwareStatementIsReadFromRequests() throws {
        let metadata = try LatchkeyJSON.decode(
            ClientMetadata.self, from: Data(#"{"software_statement":"a.b.c","software_id":"x"}"#.utf8))
        #expect(metadata.softwareStatement == "a.b.c")
        #expect(metadata.presentFieldNames == ["software_statement", "software_id"])
    }

    @Test(arguments: [
        (#"{"grant_types":["authorization_code","urn:x"]}"#, #"grant_types[1]: unknown grant type "urn:x""#),
        (#"{"token_endpoint_auth_method":"client_secret_jwt"}"#, "unknown token endpoint auth method"),
        (
            #"{"application_type":"desktop"}"#,
            #"application_type: unknown application type "desktop"; expected one of "native", "web""#
        ),
        (#"{"response_types":["id_token"]}"#, "unknown response type"),
        (#"{"redirect_uris":"com.acme.app:/cb"}"#, "redirect_uris: expected an array"),
        (#"{"dpop_bound_access_tokens":"yes"}"#, "dpop_bound_access_tokens: expected a boolean"),
    ])
    func invalidKnownMembersFailWithAReadableMessage(json: String, message: String) throws {
        let error = try #require(throws: DecodingError.self) {
            try LatchkeyJSON.decode(ClientMetadata.self, from: Data(json.utf8))
        }
        #expect(error.readableDescription.contains(message), "got: \(error.readableDescription)")
    }

    @Test func defaultsFollowRFC7591AndDesign() {
        let filled = ClientMetadata(redirectURIs: ["com.acme.app:/cb"]).applyingDefaults()
        #expect(filled.tokenEndpointAuthMethod == .clientSecretBasic)
        #expect(filled.grantTypes == [.authorizationCode])
        #expect(filled.responseTypes == [.code])
        #expect(filled.applicationType == .native)
        #expect(filled.clientType == .confidential)
        #expect(ClientMetadata(tokenEndpointAuthMethod: .noAuthentication).clientType == .public)
        let web = ClientMetadata(applicationType: .web).applyingDefaults()
        #expect(web.applicationType == .web)
    }

    @Test func fieldNamesCoverEveryMember() {
        #expect(Self.full.presentFieldNames.union(["jwks_uri"]) == Set(ClientMetadata.fieldNames))
        #expect(ClientMetadata().presentFieldNames.isEmpty)
        #expect(ClientMetadata.fieldNames.count == 19)
    }

    @Test func grantAndResponseTypesPairUp() {
        #expect(GrantType.authorizationCode.correspondingResponseType == .code)
        #expect(GrantType.implicit.correspondingResponseType == .token)
        #expect(GrantType.refreshToken.correspondingResponseType == nil)
        #expect(ResponseType.code.correspondingGrantType == .authorizationCode)
        #expect(!GrantType.implicit.isSupported)
        #expect(TokenEndpointAuthMethod.clientSecretPost.usesClientSecret)
        #expect(!TokenEndpointAuthMethod.privateKeyJWT.usesClientSecret)
    }
}
