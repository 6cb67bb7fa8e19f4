import Crypto
import Foundation
import LatchkeyTestSupport
import PostgresNIO
import Testing

@testable import LatchkeyCore
@testable import LatchkeyPersistence

@Suite struct TenantSigningKeysTests {
    let keys = TenantSigningKeys(envelope: try! KeyEnvelope(keyEncryptionKey: SymmetricKey(size: .bits256)))

    @Test func rotationPublishesBeforeSigningAndKeepsTheOldKeyForItsGracePeriod() async throws {
        try await TestDatabase.withApp { database in
            let tenant = TestEnvironment.uniqueTenant("keys")
            // Keys of the policy's algorithm: token services' lifecycle jobs on this database leave them alone.
            try await TestDatabase.createTenant(tenant, in: database, policy: #"{"signing_algorithm":"EdDSA"}"#)
            let logger = database.logger
            let first = try await database.withTenantTransaction(tenant) { c in
                try await keys.createKey(tenant: tenant, algorithm: .edDSA, status: .active, on: c, logger: logger)
            }
            let staged = try await database.withTenantTransaction(tenant) { c in
                try await keys.stageNextKey(tenant: tenant, algorithm: .edDSA, on: c, logger: logger)
            }
            try await database.withTenantTransaction(tenant) { c in
                let published = try await keys.publishedKeys(tenant: tenant, on: c, logger: logger)
                #expect(published.map(\.kid) == [first.kid, staged.kid])
                // The staged key is published but does not sign yet.
                #expect(try await keys.activeKey(tenant: tenant, on: c, logger: logger)?.kid == first.kid)
            }
            let activated = try await database.withTenantTransaction(tenant) { c in
                try await keys.activateNextKey(tenant: tenant, retiredFor: .seconds(3600), on: c, logger: logger)
            }
            #expect(activated == staged.kid)
            try await database.withTenantTransaction(tenant) { c in
                let published = try await keys.publishedKeys(tenant: tenant, on: c, logger: logger)
                #expect(published.map(\.kid) == [staged.kid, first.kid])
                #expect(published.map(\.status) == [.active, .retired])
                let (kid, signer) = try #require(try await keys.activeKey(tenant: tenant, on: c, logger: logger))
                #expect(kid == staged.kid)
                // What the active key signs verifies with the published public JWK.
                let token = try CompactJWS.sign(payload: Data("{}".utf8), using: signer)
                try CompactJWS(parsing: token).verify(using: published[0].jwk, allowedAlgorithms: [.edDSA])
                #expect(published.allSatisfy { !$0.jwk.hasPrivateMembers })
            }
            // Without a staged key, activation changes nothing.
            let again = try await database.withTenantTransaction(tenant) { c in
                try await keys.activateNextKey(tenant: tenant, retiredFor: .seconds(0), on: c, logger: logger)
            }
            #expect(again == nil)
        }
    }

    @Test func retiredKeysDisappearAfterTheirGracePeriod() async throws {
        try await TestDatabase.withApp { database in
            let tenant = TestEnvironment.uniqueTenant("keys")
            try await TestDatabase.createTenant(tenant, in: database)
            let logger = database.logger
            try await database.withTenantTransaction(tenant) { c in
                try await keys.createKey(tenant: tenant, status: .active, on: c, logger: logger)
                let next = try await keys.stageNextKey(tenant: tenant, on: c, logger: logger)
                _ = try await keys.activateNextKey(tenant: tenant, retiredFor: .seconds(0), on: c, logger: logger)
                #expect(try await keys.publishedKeys(tenant: tenant, on: c, logger: logger).map(\.kid) == [next.kid])
            }
        }
    }

    @Test func aSealedKeyMovedToAnotherRowDoesNotOpen() async throws {
        try await TestDatabase.withApp { database in
            let tenant = TestEnvironment.uniqueTenant("keys")
            try await TestDatabase.createTenant(tenant, in: database)
            let logger = database.logger
            try await database.withTenantTransaction(tenant) { c in
                let key = try await keys.createKey(tenant: tenant, status: .active, on: c, logger: logger)
                // Give the row another kid: the associated data (tenant + kid) no longer matches.
                try await c.query("UPDATE signing_keys SET kid = 'moved' WHERE kid = \(key.kid)", logger: logger)
                await #expect(throws: KeyEnvelope.Failure.self) {
                    _ = try await keys.activeKey(tenant: tenant, on: c, logger: logger)
                }
            }
        }
    }
}
