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

/// A rotated-out client secret authenticates until its overlap ends, then never again.
@Suite struct ClientSecretOverlapTests {
    static func status(_ client: some TestClientProtocol, _ fixture: TokenServiceHarness, secret: String) async throws
        -> HTTPResponse.Status
    {
        try await client.execute(
            uri: fixture.tokenPath, method: .post, headers: TokenRequest.headers(basic: ("svc-rotating", secret)),
            body: TokenRequest.form([("grant_type", "client_credentials")])
        ) { $0.status }
    }

    @Test func thePreviousSecretWorksOnlyWithinItsOverlap() async throws {
        try await TokenServiceHarness.run { client, fixture in
            let old = try #require(try await fixture.insertClient("svc-rotating", scope: "api"))
            let new = SecretTokens.generate(prefix: "lk_cs_")
            let hasher = fixture.settings.secretHasher
            try await fixture.database.withTenantTransaction(fixture.tenant) { connection in
                try await connection.query(
                    """
                    UPDATE clients SET previous_client_secret_hash = client_secret_hash,
                           previous_client_secret_expires_at = now() + interval '1 hour',
                           client_secret_hash = \(hasher.hash(new))
                    WHERE client_id = 'svc-rotating'
                    """, logger: fixture.database.logger)
            }
            #expect(try await Self.status(client, fixture, secret: new) == .ok)
            #expect(try await Self.status(client, fixture, secret: old) == .ok)
            #expect(try await Self.status(client, fixture, secret: "lk_cs_guess") == .unauthorized)

            try await fixture.database.withTenantTransaction(fixture.tenant) { connection in
                try await connection.query(
                    """
                    UPDATE clients SET previous_client_secret_expires_at = now() - interval '1 second'
                    WHERE client_id = 'svc-rotating'
                    """, logger: fixture.database.logger)
            }
            #expect(try await Self.status(client, fixture, secret: old) == .unauthorized)
            #expect(try await Self.status(client, fixture, secret: new) == .ok)
        }
    }
}
