import Foundation
import LatchkeyCore

/// Real CloudEvents of every type, as the services produce them (typed payloads, `encoded()`).
struct AuditEventFactory {
    let tenant: TenantSlug
    var time = Date()

    init(tenant: String) {
        self.tenant = TenantSlug(rawValue: tenant)!
    }

    static func clientID(_ number: Int) -> String { "client-\(number)" }

    /// A stable user UUID per number (same user across tenants on purpose: isolation must hold anyway).
    static func user(_ number: Int) -> UUID {
        UUID(uuidString: String(format: "00000000-0000-4000-8000-%012d", number))!
    }

    private func event<P: EventPayload>(_ payload: P, source: String) throws -> EncodedEvent {
        try EncodedEvent(CloudEvent(source: source, time: time, data: payload))
    }

    func registered(client: String, user: UUID, template: String? = "acme-mobile") throws -> EncodedEvent {
        try event(
            ClientRegistered(
                tenant: tenant, clientID: client, clientName: "Acme on device \(client)", applicationType: .native,
                clientType: .confidential, tokenEndpointAuthMethod: .clientSecretBasic,
                grantTypes: [.authorizationCode, .refreshToken], redirectURIs: ["com.acme.mobile:/callback"],
                scope: "openid offline_access", softwareID: template, templateID: template, authenticatedUser: user,
                registrationMechanism: .userToken, dpopBoundAccessTokens: true, actor: .user(user)),
            source: EventSource.registrationGateway)
    }

    func issued(client: String, user: UUID?, grant: GrantType = .authorizationCode) throws -> EncodedEvent {
        try event(
            TokenIssued(
                tenant: tenant, clientID: client, userID: user, grantType: grant, scope: "openid offline_access",
                jti: UUID().uuidString, jkt: "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs",
                tokenTypes: [.access, .refresh],
                expiresAt: time.addingTimeInterval(300), refreshFamilyID: "fam-\(client)",
                actor: user.map(EventActor.user) ?? .client(client)),
            source: EventSource.tokenService)
    }

    func updated(client: String, user: UUID) throws -> EncodedEvent {
        try event(
            ClientUpdated(
                tenant: tenant, clientID: client, changedFields: ["client_name"], secretRotated: true,
                authenticatedUser: user, actor: .client(client)),
            source: EventSource.registrationGateway)
    }

    func revoked(client: String, user: UUID?, reason: ClientRevoked.Reason = .admin, detail: String? = "device stolen")
        throws -> EncodedEvent
    {
        try event(
            ClientRevoked(
                tenant: tenant, clientID: client, reason: reason, reasonDetail: detail, authenticatedUser: user,
                actor: .admin("alice@acme.example"), revokedAt: time),
            source: EventSource.registrationGateway)
    }

    func userRegistered(user: UUID) throws -> EncodedEvent {
        try event(
            UserRegistered(
                tenant: tenant, userID: user, username: "user-\(user.uuidString.suffix(4))", method: .password,
                clientID: "mobile-dcr-client", actor: .user(user)),
            source: EventSource.tokenService)
    }

    func tokenRevoked(client: String, user: UUID?) throws -> EncodedEvent {
        try event(
            TokenRevoked(
                tenant: tenant, clientID: client, userID: user, tokenType: .refresh, refreshFamilyID: "fam-\(client)",
                revokedCount: 2, reason: .revocationRequest, actor: .client(client), revokedAt: time),
            source: EventSource.tokenService)
    }

    func userDisabled(user: UUID) throws -> EncodedEvent {
        try event(
            UserDisabled(
                tenant: tenant, userID: user, reason: "account compromised", actor: .admin("alice@acme.example"),
                disabledAt: time),
            source: EventSource.registrationGateway)
    }

    func userEnabled(user: UUID) throws -> EncodedEvent {
        try event(
            UserEnabled(
                tenant: tenant, userID: user, reason: "password reset", actor: .admin("alice@acme.example"),
                enabledAt: time),
            source: EventSource.registrationGateway)
    }

    func passwordChanged(user: UUID) throws -> EncodedEvent {
        try event(
            UserPasswordChanged(tenant: tenant, userID: user, method: .user, actor: .user(user), changedAt: time),
            source: EventSource.tokenService)
    }

    func reuseDetected(client: String, user: UUID?) throws -> EncodedEvent {
        try event(
            RefreshTokenReuseDetected(
                tenant: tenant, clientID: client, userID: user, refreshFamilyID: "fam-\(client)",
                sourceAddress: "203.0.113.9", familyRevoked: true, actor: .system("refresh-reuse-detector")),
            source: EventSource.tokenService)
    }

    /// Events 0..<count of ``mixed(_:clients:)`` with fresh ids: each (client, type) slot is encoded
    /// once as a typed event and then copied with a new `id` (and `jti`), because encoding ten
    /// thousand events one by one takes seconds in a debug build.
    func bulk(_ count: Int, clients: Int = 20) throws -> [EncodedEvent] {
        var templates: [Int: (EncodedEvent, [String: JSONValue])] = [:]
        var events: [EncodedEvent] = []
        events.reserveCapacity(count)
        for index in 0..<count {
            let slot = index % (clients * 10)
            if templates[slot] == nil {
                let event = try mixed(slot, clients: clients)
                templates[slot] = (event, try StrictJSONParser.parse(event.value).objectValue ?? [:])
            }
            guard var (event, object) = templates[slot] else { continue }
            let id = UUID().uuidString.lowercased()
            object["id"] = .string(id)
            if var data = object["data"]?.objectValue, data["jti"] != nil {
                data["jti"] = .string(UUID().uuidString)
                object["data"] = .object(data)
            }
            event.id = id
            event.value = CanonicalJSON.encode(.object(object))
            events.append(event)
        }
        return events
    }

    /// Event `index` of a mixed stream over `clients` clients: every type appears, token issuance most.
    func mixed(_ index: Int, clients: Int = 20) throws -> EncodedEvent {
        let clientNumber = index % clients
        let client = Self.clientID(clientNumber)
        let user = Self.user(clientNumber % 7)
        switch (index / clients) % 10 {
        case 0: return try registered(client: client, user: user)
        case 1, 2, 3, 4: return try issued(client: client, user: user)
        case 5: return try updated(client: client, user: user)
        case 6: return try userRegistered(user: user)
        case 7: return try tokenRevoked(client: client, user: user)
        case 8: return try reuseDetected(client: client, user: user)
        default: return try revoked(client: client, user: user, reason: .refreshTokenReuse, detail: nil)
        }
    }
}
