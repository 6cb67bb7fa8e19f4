import Crypto
import Foundation
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging
import PostgresNIO

/// Users who arrive through an upstream provider: found, or created once, by (tenant, provider, sub).
struct ExternalAccounts: Sendable {
    let outbox: OutboxWriter

    /// The Latchkey user linked to `subject` at `provider`, created with its external identity and a
    /// `UserRegistered` outbox row on first sight, in the caller's transaction.
    ///
    /// Two concurrent first callbacks for one account serialise on a transaction-scoped advisory lock
    /// on the identity's key, so the second sees the first's committed row; the primary key of
    /// `external_identities` (insert `ON CONFLICT DO NOTHING`) is the last line of defence.
    func provision(
        provider: String, subject: String, preferredUsername: String?, name: String? = nil, email: String?,
        emailVerified: Bool = false,
        tenant: ResolvedTenant,
        clientID: String?, on connection: PostgresConnection, logger: Logger
    ) async throws -> UUID {
        let key = "\(tenant.id)\n\(provider)\n\(subject)"
        try await connection.query("SELECT pg_advisory_xact_lock(hashtextextended(\(key), 0))", logger: logger)
        if let existing = try await linkedUser(provider: provider, subject: subject, on: connection, logger: logger) {
            return existing
        }
        let userID = UUID()
        let username = try await insertUser(
            userID, candidates: usernames(provider: provider, subject: subject, preferred: preferredUsername),
            name: name, email: email.flatMap { SignUpRules.emailProblem($0) == nil ? $0 : nil },
            emailVerified: emailVerified,
            tenant: tenant.id, on: connection, logger: logger)
        let linked = try await connection.query(
            """
            INSERT INTO external_identities (tenant_id, provider, provider_user_id, user_id)
            VALUES (\(tenant.id), \(provider), \(subject), \(userID))
            ON CONFLICT DO NOTHING RETURNING user_id
            """, logger: logger)
        var created = false
        for try await _ in linked.decode(UUID.self) { created = true }
        // Unreachable while the lock is held; throwing rolls back the user row just inserted.
        guard created else { throw UpstreamFailure(description: "external identity was linked concurrently") }
        let event = UserRegistered(
            tenant: tenant.slug, userID: userID, username: username, method: .upstream, provider: provider,
            clientID: clientID, actor: .user(userID))
        try await outbox.append(
            CloudEvent(source: EventSource.tokenService, data: event), on: connection, logger: logger)
        return userID
    }

    private func linkedUser(
        provider: String, subject: String, on connection: PostgresConnection, logger: Logger
    ) async throws -> UUID? {
        let rows = try await connection.query(
            "SELECT user_id FROM external_identities WHERE provider = \(provider) AND provider_user_id = \(subject)",
            logger: logger)
        for try await userID in rows.decode(UUID.self) { return userID }
        return nil
    }

    /// The provider's `preferred_username` when it is a valid username, then `{provider}:{sub}` (hashed when long).
    func usernames(provider: String, subject: String, preferred: String?) -> [String] {
        var names: [String] = []
        if let preferred, SignUpRules.usernameProblem(preferred) == nil { names.append(preferred) }
        let plain = "\(provider):\(subject)"
        if plain.utf8.count <= 128 {
            names.append(plain)
        } else {
            let digest = SHA256.hash(data: Data(subject.utf8)).map { String(format: "%02x", $0) }.joined()
            names.append("\(provider.prefix(60)):\(digest)")
        }
        return names
    }

    /// Inserts the user with the first free candidate name; returns the name used.
    private func insertUser(
        _ userID: UUID, candidates: [String], name: String?, email: String?, emailVerified: Bool, tenant: String,
        on connection: PostgresConnection, logger: Logger
    ) async throws -> String {
        for username in candidates {
            let rows = try await connection.query(
                """
                INSERT INTO users (tenant_id, user_id, username, name, email, email_verified)
                VALUES (\(tenant), \(userID), \(username), \(name), \(email), \(email != nil && emailVerified))
                ON CONFLICT DO NOTHING RETURNING user_id
                """, logger: logger)
            for try await _ in rows.decode(UUID.self) { return username }
        }
        throw UpstreamFailure(description: "no free username for the upstream account")
    }
}
