import Foundation

@testable import LatchkeyCore

/// Sample events of every type: one with every optional member set (so the schema must list
/// them all) and one with none set (so the schema must not require them).
enum SampleEvents {
    static let tenant = TenantSlug(rawValue: "acme")!
    static let userID = UUID(uuidString: "5F0C6B1E-2A4D-4C8E-9B7A-1D2E3F405162")!
    static let clientID = "c6a1f4d2-1b3e-4f5a-8c7d-9e0f1a2b3c4d"
    static let jkt = "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"
    static let time = RFC3339Timestamp.date(from: "2025-03-14T15:09:26.535897Z")!
    static let later = RFC3339Timestamp.date(from: "2025-03-14T15:19:26.535897Z")!

    /// Encoded samples of `type`, labelled for test output.
    static func encoded(_ type: LatchkeyEventType) throws -> [(label: String, data: Data)] {
        func encode(_ event: any Encodable) throws -> Data { try LatchkeyJSON.encode(event) }
        return try samples(type).map { ($0.label, try encode($0.event)) }
    }

    /// Samples of `type` as events, labelled for test output.
    static func samples(_ type: LatchkeyEventType) -> [(label: String, event: any Encodable)] {
        switch type {
        case .clientRegistered: return both(fullClientRegistered, minimalClientRegistered)
        case .tokenIssued: return both(fullTokenIssued, minimalTokenIssued)
        case .clientRevoked: return both(fullClientRevoked, minimalClientRevoked)
        case .clientUpdated: return both(fullClientUpdated, minimalClientUpdated)
        case .userRegistered: return both(fullUserRegistered, minimalUserRegistered)
        case .tokenRevoked: return both(fullTokenRevoked, minimalTokenRevoked)
        case .refreshTokenReuseDetected: return both(fullReuseDetected, minimalReuseDetected)
        case .userDisabled: return both(userDisabled, userDisabled)
        case .userEnabled: return both(userEnabled, userEnabled)
        case .userPasswordChanged: return both(passwordChangedByUser, passwordReset)
        }
    }

    static func event<P: EventPayload>(_ payload: P, source: String = EventSource.registrationGateway) -> CloudEvent<P>
    {
        CloudEvent(id: "3d5c9b8e-0f1a-4b2c-8d3e-4f5a6b7c8d9e", source: source, time: time, data: payload)
    }

    private static func both<P: EventPayload>(_ full: P, _ minimal: P) -> [(label: String, event: any Encodable)] {
        [
            ("\(P.self) with every member", event(full)),
            ("\(P.self) with required members only", event(minimal)),
        ]
    }

    static let fullClientRegistered = ClientRegistered(
        tenant: tenant, clientID: clientID, clientName: "Acme Mobile on Pixel 8", applicationType: .native,
        clientType: .confidential, tokenEndpointAuthMethod: .clientSecretBasic,
        grantTypes: [.authorizationCode, .refreshToken], redirectURIs: ["com.acme.mobile:/callback"],
        scope: "openid profile", softwareID: "acme-mobile", softwareVersion: "4.2.0", templateID: "acme-mobile",
        authenticatedUser: userID, registrationMechanism: .userToken, dpopBoundAccessTokens: true,
        softwareStatementIssuer: "https://statements.acme.example", secretExpiresAt: later, actor: .user(userID))

    static let minimalClientRegistered = ClientRegistered(
        tenant: tenant, clientID: clientID, applicationType: .web, clientType: .public,
        tokenEndpointAuthMethod: .noAuthentication, grantTypes: [], redirectURIs: [], scope: "",
        registrationMechanism: .open,
        dpopBoundAccessTokens: false, actor: .system("open-registration"))

    static let fullTokenIssued = TokenIssued(
        tenant: tenant, clientID: clientID, userID: userID, grantType: .authorizationCode, scope: "openid profile",
        jti: "at-7Hc2kQ", jkt: jkt, tokenTypes: [.access, .refresh, .id], expiresAt: later,
        refreshExpiresAt: later.addingTimeInterval(86_400), refreshFamilyID: "fam-01HV9Z",
        audience: ["https://api.acme.example"], actor: .user(userID))

    static let minimalTokenIssued = TokenIssued(
        tenant: tenant, clientID: clientID, grantType: .clientCredentials, scope: "", jti: "at-1",
        tokenTypes: [.access], expiresAt: later, actor: .client(clientID))

    static let fullClientRevoked = ClientRevoked(
        tenant: tenant, clientID: clientID, reason: .admin, reasonDetail: "device reported stolen",
        authenticatedUser: userID, actor: .admin("alice@acme.example"), revokedAt: time,
        accessTokensExpireAt: time.addingTimeInterval(660))

    static let minimalClientRevoked = ClientRevoked(
        tenant: tenant, clientID: clientID, reason: .expired, actor: .system("inactive-client-expiry"),
        revokedAt: time)

    static let fullClientUpdated = ClientUpdated(
        tenant: tenant, clientID: clientID, changedFields: ["redirect_uris", "client_name"], secretRotated: true,
        registrationTokenRotated: true, authenticatedUser: userID, templateID: "acme-mobile", templateVersion: 3,
        actor: .client(clientID))

    static let minimalClientUpdated = ClientUpdated(
        tenant: tenant, clientID: clientID, changedFields: [], actor: .admin("ops"))

    static let fullUserRegistered = UserRegistered(
        tenant: tenant, userID: userID, username: "jdoe", method: .upstream, provider: "google",
        clientID: "mobile-dcr-client", actor: .user(userID))

    static let minimalUserRegistered = UserRegistered(
        tenant: tenant, userID: userID, username: "jdoe", method: .password, actor: .user(userID))

    static let userDisabled = UserDisabled(
        tenant: tenant, userID: userID, reason: "account compromised", actor: .admin("ops-console"), disabledAt: time)

    static let userEnabled = UserEnabled(
        tenant: tenant, userID: userID, reason: "password reset", actor: .admin("ops-console"), enabledAt: later)

    static let passwordChangedByUser = UserPasswordChanged(
        tenant: tenant, userID: userID, method: .user, actor: .user(userID), changedAt: time)

    static let passwordReset = UserPasswordChanged(
        tenant: tenant, userID: userID, method: .adminReset, actor: .admin("ops-console"), changedAt: later)

    static let fullTokenRevoked = TokenRevoked(
        tenant: tenant, clientID: clientID, userID: userID, tokenType: .refresh, jti: "rt-9",
        refreshFamilyID: "fam-01HV9Z",
        revokedCount: 4, reason: .refreshTokenReuse, reasonDetail: "family revoked after replay",
        actor: .system("refresh-reuse-detector"), revokedAt: time)

    static let minimalTokenRevoked = TokenRevoked(
        tenant: tenant, clientID: clientID, tokenType: .access, reason: .revocationRequest, actor: .client(clientID),
        revokedAt: time)

    static let fullReuseDetected = RefreshTokenReuseDetected(
        tenant: tenant, clientID: clientID, userID: userID, refreshFamilyID: "fam-01HV9Z", jkt: jkt,
        sourceAddress: "203.0.113.7", familyRevoked: true, actor: .client(clientID))

    static let minimalReuseDetected = RefreshTokenReuseDetected(
        tenant: tenant, clientID: clientID, refreshFamilyID: "fam-01HV9Z", familyRevoked: false,
        actor: .client(clientID))
}
