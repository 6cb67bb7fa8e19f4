import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import LatchkeyTestSupport
import PostgresNIO
import Testing

@testable import TokenService

/// client_credentials authenticates from cached client records; a cached record never outlives a revocation
/// or a new secret for even one grant.
@Suite struct ClientCacheTests {
    @Test func aRevokedClientIsRefusedOnItsVeryNextGrant() async throws {
        try await TokenServiceHarness.run(setup: .live) { client, fixture in
            let secret = try #require(try await fixture.insertClient("svc", scope: "api"))
            // The second grant authenticates from the cached record.
            for _ in 0..<2 { #expect(try await grant(client, fixture, "svc", secret) == .ok) }
            try await fixture.setClientStatus("svc", .revoked)
            let (status, error) = try await grantError(client, fixture, "svc", secret)
            #expect(status == .unauthorized)
            #expect(error == "invalid_client")
            #expect(try await fixture.outboxPayloads(type: .tokenIssued).count == 2)
            try await fixture.setClientStatus("svc", .active)
            #expect(try await grant(client, fixture, "svc", secret) == .ok)
        }
    }

    @Test func aNewSecretReplacesTheCachedOneAtOnce() async throws {
        try await TokenServiceHarness.run(setup: .live) { client, fixture in
            let old = try #require(try await fixture.insertClient("svc", scope: "api"))
            #expect(try await grant(client, fixture, "svc", old) == .ok)
            let new = SecretTokens.generate()
            try await fixture.database.withTenantTransaction(fixture.tenant) { connection in
                try await connection.query(
                    "UPDATE clients SET client_secret_hash = \(fixture.settings.secretHasher.hash(new)) WHERE client_id = 'svc'",
                    logger: fixture.database.logger)
            }
            #expect(try await grantError(client, fixture, "svc", old).0 == .unauthorized)
            #expect(try await grant(client, fixture, "svc", new) == .ok)
            #expect(try await grantError(client, fixture, "svc", old).0 == .unauthorized)
        }
    }

    /// The grant's own statement refuses a client revoked after its record was read, whether or not the
    /// service has heard of the revocation yet.
    @Test func theGrantStatementRefusesAClientRevokedAfterItsRecordWasRead() async throws {
        try await TokenServiceHarness.run { _, fixture in
            try await fixture.insertClient("svc", scope: "api")
            let grant = try await DirectGrant.prepare(fixture, "svc")
            let issued = try await grant.issue()
            #expect(!issued.accessToken.isEmpty)
            try await fixture.setClientStatus("svc", .revoked)
            await #expect(throws: ClientNoLongerUsable.self) {
                try await grant.issue()
            }
            // Nothing of the refused grant was written.
            #expect(try await fixture.outboxPayloads(type: .tokenIssued).count == 1)
        }
    }

    @Test func aCachedPreviousSecretStopsWhenItsOverlapEnds() async throws {
        try await TokenServiceHarness.run(setup: .live) { client, fixture in
            let old = try #require(try await fixture.insertClient("svc", scope: "api"))
            let new = SecretTokens.generate()
            try await rotate("svc", to: new, overlap: "1 hour", fixture)
            // The second grant with the rotated-out secret authenticates from the cached record.
            for _ in 0..<2 { #expect(try await grant(client, fixture, "svc", old) == .ok) }
            try await endOverlap("svc", fixture)
            #expect(try await grantError(client, fixture, "svc", old).0 == .unauthorized)
            #expect(try await grant(client, fixture, "svc", new) == .ok)
        }
    }

    /// The statement re-checks the secret the client authenticated with, not only the record's current one:
    /// a rotated-out secret whose overlap ended after the record was read issues nothing.
    @Test func theGrantStatementRefusesAPreviousSecretWhoseOverlapEndedAfterItsRecordWasRead() async throws {
        try await TokenServiceHarness.run { _, fixture in
            let old = try #require(try await fixture.insertClient("svc", scope: "api"))
            try await rotate("svc", to: SecretTokens.generate(), overlap: "1 hour", fixture)
            let grant = try await DirectGrant.prepare(fixture, "svc") { stored in
                stored.authenticatedSecretHash = stored.matchingSecretHash(
                    old, hasher: fixture.settings.secretHasher, at: Date())
                #expect(stored.authenticatedSecretHash == stored.previousSecretHash)
            }
            _ = try await grant.issue()
            try await endOverlap("svc", fixture)
            await #expect(throws: ClientNoLongerUsable.self) {
                try await grant.issue()
            }
            #expect(try await fixture.outboxPayloads(type: .tokenIssued).count == 1)
        }
    }

    /// A change of the metadata the decision was made on (scope, grant types, DPoP binding) also stops the
    /// statement, heard of or not.
    @Test func theGrantStatementRefusesAClientWhoseMetadataChangedAfterItsRecordWasRead() async throws {
        try await TokenServiceHarness.run { _, fixture in
            try await fixture.insertClient("svc", scope: "api")
            let grant = try await DirectGrant.prepare(fixture, "svc")
            try await fixture.database.withTenantTransaction(fixture.tenant) { connection in
                try await connection.query(
                    """
                    UPDATE clients SET metadata = jsonb_set(metadata, '{scope}', '"other"') WHERE client_id = 'svc'
                    """, logger: fixture.database.logger)
            }
            await #expect(throws: ClientNoLongerUsable.self) {
                try await grant.issue()
            }
            #expect(try await fixture.outboxPayloads(type: .tokenIssued).isEmpty)
        }
    }

    /// Refresh grants authenticate public clients from the cache too: a revoked client is refused on its very
    /// next refresh, and its refresh token is not rotated.
    @Test func aRevokedPublicClientIsRefusedOnItsVeryNextRefresh() async throws {
        try await TokenServiceHarness.run(setup: .live) { client, fixture in
            let (app, first) = try await RefreshTokenGrantTests.signedIn(client, fixture)
            let (status, json) = try await app.refresh(client, fixture, token: first)
            #expect(status == 200, "\(json)")
            let second = try #require(json["refresh_token"] as? String)
            try await fixture.setClientStatus(app.clientID, .revoked)
            #expect(try await app.refresh(client, fixture, token: second).0 == 401)
            #expect(try await fixture.outboxPayloads(type: .tokenIssued).count == 2)
            try await fixture.setClientStatus(app.clientID, .active)
            #expect(try await app.refresh(client, fixture, token: second).0 == 200, "the token was not spent")
        }
    }

    /// The rotation's statement refuses a client revoked after its record was read, whether or not the service
    /// has heard of the revocation yet, and writes nothing: the old refresh token stays active.
    @Test func theRotationStatementRefusesAClientRevokedAfterItsRecordWasRead() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let (app, token) = try await RefreshTokenGrantTests.signedIn(client, fixture)
            let grant = try await DirectGrant.prepare(fixture, app.clientID)
            let issuedBefore = try await fixture.outboxPayloads(type: .tokenIssued).count
            try await fixture.setClientStatus(app.clientID, .revoked)
            #expect(try await grant.rotate(token, fixture) == nil)
            #expect(try await fixture.outboxPayloads(type: .tokenIssued).count == issuedBefore)
            try await fixture.setClientStatus(app.clientID, .active)
            #expect(try await grant.rotate(token, fixture) != nil, "the refused rotation left the token active")
            #expect(try await grant.rotate(token, fixture) == nil, "a rotated token does not rotate twice")
        }
    }

    /// The redemption's statement refuses a client revoked after its record was read, and writes nothing: the
    /// code stays unused.
    @Test func theRedemptionStatementRefusesAClientRevokedAfterItsRecordWasRead() async throws {
        try await TokenServiceHarness.run { _, fixture in
            let app = try await AuthorizationCodeGrantTests.publicApp(fixture)
            let user = try await fixture.insertUser()
            let code = try await fixture.insertCode(clientID: app.clientID, userID: user)
            let grant = try await DirectGrant.prepare(fixture, app.clientID)
            try await fixture.setClientStatus(app.clientID, .revoked)
            #expect(try await grant.redeem(code, user: user, fixture) == nil)
            #expect(try await fixture.outboxPayloads(type: .tokenIssued).isEmpty)
            try await fixture.setClientStatus(app.clientID, .active)
            #expect(try await grant.redeem(code, user: user, fixture) != nil, "the refused redemption left it unused")
            #expect(try await grant.redeem(code, user: user, fixture) == nil, "a code is redeemed once")
        }
    }

    /// A scope added to a cached client is granted on the very next request: a refusal decided on a cached
    /// record is decided again on the database's.
    @Test func aScopeAddedToACachedClientIsGrantedAtOnce() async throws {
        try await TokenServiceHarness.run(setup: .live) { client, fixture in
            let secret = try #require(try await fixture.insertClient("svc", scope: "api"))
            for _ in 0..<2 { #expect(try await grant(client, fixture, "svc", secret) == .ok) }
            try await fixture.database.withTenantTransaction(fixture.tenant) { connection in
                try await connection.query(
                    """
                    UPDATE clients SET metadata = jsonb_set(metadata, '{scope}', '"api profile"') WHERE client_id = 'svc'
                    """, logger: fixture.database.logger)
            }
            let status = try await client.execute(
                uri: fixture.tokenPath, method: .post, headers: TokenRequest.headers(basic: ("svc", secret)),
                body: TokenRequest.form([("grant_type", "client_credentials"), ("scope", "profile")])
            ) { $0.status }
            #expect(status == .ok)
        }
    }

    private func rotate(_ id: String, to secret: String, overlap: String, _ fixture: TokenServiceHarness) async throws {
        let hash = fixture.settings.secretHasher.hash(secret)
        try await fixture.database.withTenantTransaction(fixture.tenant) { connection in
            try await connection.query(
                """
                UPDATE clients SET previous_client_secret_hash = client_secret_hash,
                       previous_client_secret_expires_at = now() + \(overlap)::interval, client_secret_hash = \(hash)
                WHERE client_id = \(id)
                """, logger: fixture.database.logger)
        }
    }

    private func endOverlap(_ id: String, _ fixture: TokenServiceHarness) async throws {
        try await fixture.database.withTenantTransaction(fixture.tenant) { connection in
            try await connection.query(
                "UPDATE clients SET previous_client_secret_expires_at = now() - interval '1 second' WHERE client_id = \(id)",
                logger: fixture.database.logger)
        }
    }

    private func grant(
        _ client: any TestClientProtocol, _ fixture: TokenServiceHarness, _ id: String, _ secret: String
    ) async throws -> HTTPResponse.Status {
        try await grantError(client, fixture, id, secret).0
    }

    private func grantError(
        _ client: any TestClientProtocol, _ fixture: TokenServiceHarness, _ id: String, _ secret: String
    ) async throws -> (HTTPResponse.Status, String?) {
        try await client.execute(
            uri: fixture.tokenPath, method: .post, headers: TokenRequest.headers(basic: (id, secret)),
            body: TokenRequest.form([("grant_type", "client_credentials")])
        ) { response in
            (response.status, TokenRequest.json(response)["error"] as? String)
        }
    }
}

/// The grant's one statement called directly, on a client record read before the changes a test then makes.
struct DirectGrant {
    let issuer: TokenIssuer
    let request: IssuanceRequest
    let tenant: ResolvedTenant
    let endpoints: TenantEndpoints
    let signer: (kid: String, key: SigningKey)
    let database: Database

    static func prepare(
        _ fixture: TokenServiceHarness, _ clientID: String, adjust: (inout StoredClient) -> Void = { _ in }
    ) async throws -> DirectGrant {
        let database = fixture.database
        var stored = try #require(
            try await database.withTenantTransaction(fixture.tenant) { connection in
                try await ClientRepository.find(clientID, on: connection, logger: database.logger)
            })
        adjust(&stored)
        let slug = try #require(TenantSlug(fixture.tenant))
        let tenant = try #require(try await TenantDirectory(database: database).tenant(slug))
        let signer = try await TenantKeyStore(
            keys: TenantSigningKeys(envelope: fixture.settings.keyEnvelope), database: database
        ).signingKey(for: tenant)
        return DirectGrant(
            issuer: TokenIssuer(
                hasher: fixture.settings.secretHasher, outbox: OutboxWriter(),
                usage: ClientUsageRecorder(database: database)),
            request: IssuanceRequest(
                client: stored, userID: nil, scopes: ["api"], grantType: .clientCredentials, jkt: nil),
            tenant: tenant, endpoints: TenantEndpoints(settings: fixture.settings, tenant: tenant.id), signer: signer,
            database: database)
    }

    func issue() async throws -> TokenResponse {
        try await issuer.issueAccessToken(
            request, tenant: tenant, endpoints: endpoints, signer: signer, database: database)
    }

    /// Redeems `code` of `user` in the redemption's statement.
    func redeem(_ code: String, user: UUID, _ fixture: TokenServiceHarness) async throws -> TokenResponse? {
        var redemption = request
        redemption.userID = user
        redemption.scopes = ["openid"]
        redemption.grantType = .authorizationCode
        redemption.refresh = RefreshPlan(familyID: UUID(), generation: 0, expiresAt: Date() + 3_600, boundJKT: nil)
        return try await issuer.redeemAuthorizationCode(
            redemption, code: fixture.settings.secretHasher.hash(code), tenant: tenant, endpoints: endpoints,
            signer: signer, database: database)
    }

    /// Rotates `refreshToken` (the first of its family, as the code grant issued it) in the rotation's statement.
    func rotate(_ refreshToken: String, _ fixture: TokenServiceHarness) async throws -> TokenResponse? {
        let hash = fixture.settings.secretHasher.hash(refreshToken)
        let family = try #require(
            try await database.withTenantTransaction(tenant.id) { connection in
                let rows = try await connection.query(
                    "SELECT family_id, user_id, expires_at FROM refresh_tokens WHERE token_hash = \(hash)",
                    logger: database.logger)
                for try await row in rows.decode((UUID, UUID?, Date).self) { return row }
                return nil
            })
        var rotation = request
        rotation.userID = family.1
        rotation.scopes = ["openid"]
        rotation.grantType = .refreshToken
        rotation.refresh = RefreshPlan(
            familyID: family.0, generation: 1, expiresAt: family.2, boundJKT: nil, successorOf: refreshToken)
        return try await issuer.rotateRefreshToken(
            rotation, rotating: hash, tenant: tenant, endpoints: endpoints, signer: signer, database: database)
    }
}
