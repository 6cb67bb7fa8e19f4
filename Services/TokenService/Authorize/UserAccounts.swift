import Foundation
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging
import PostgresNIO

/// Password sign-in and sign-up against the tenant's `users` table.
struct UserAccounts: Sendable {
    let passwordHasher: PasswordHasher
    /// Verified against when the username is unknown, so both failures cost one scrypt.
    let dummyHash: String
    let outbox: OutboxWriter
    /// Hashes session cookies as `SSOSessions` stores them.
    let sessionHasher: KeyedHasher

    init(passwordHasher: PasswordHasher, sessionHasher: KeyedHasher, outbox: OutboxWriter) throws {
        self.passwordHasher = passwordHasher
        self.sessionHasher = sessionHasher
        self.outbox = outbox
        self.dummyHash = try passwordHasher.hash(SecretTokens.generate())
    }

    /// What sign-in needs of a user row, read in a short transaction so the hash is checked outside it.
    struct StoredPassword: Sendable {
        let userID: UUID
        let hash: String?
        let isActive: Bool
    }

    func find(username: String, on connection: PostgresConnection, logger: Logger) async throws -> StoredPassword? {
        let rows = try await connection.query(
            "SELECT user_id, password_hash, status FROM users WHERE lower(username) = lower(\(username))",
            logger: logger)
        var found: StoredPassword?
        for try await (id, hash, status) in rows.decode((UUID, String?, String).self) {
            found = StoredPassword(userID: id, hash: hash, isActive: status == "active")
        }
        return found
    }

    /// The stored password and username of an active user, by id.
    func find(userID: UUID, on connection: PostgresConnection, logger: Logger) async throws
        -> (stored: StoredPassword, username: String)?
    {
        let rows = try await connection.query(
            "SELECT password_hash, status, username FROM users WHERE user_id = \(userID)", logger: logger)
        for try await (hash, status, username) in rows.decode((String?, String, String).self) {
            return (StoredPassword(userID: userID, hash: hash, isActive: status == "active"), username)
        }
        return nil
    }

    /// Replaces the password hash if it is still `old`, ends the user's other sign-in sessions (a changed
    /// password is often a suspected leak) and records `UserPasswordChanged`; false when another change came first.
    func replacePassword(
        of userID: UUID, in tenant: ResolvedTenant, from old: String, to new: String, keeping session: String,
        on connection: PostgresConnection, logger: Logger
    ) async throws -> Bool {
        let rows = try await connection.query(
            """
            UPDATE users SET password_hash = \(new), updated_at = now()
            WHERE user_id = \(userID) AND password_hash = \(old) RETURNING 1
            """, logger: logger)
        var changed = false
        for try await _ in rows.decode(Int.self) { changed = true }
        guard changed else { return false }
        try await connection.query(
            """
            UPDATE sso_sessions SET revoked_at = now()
            WHERE user_id = \(userID) AND revoked_at IS NULL AND session_hash <> \(sessionHasher.hash(session))
            """, logger: logger)
        let event = UserPasswordChanged(
            tenant: tenant.slug, userID: userID, method: .user, actor: .user(userID), changedAt: Date())
        try await outbox.append(
            CloudEvent(source: EventSource.tokenService, data: event), on: connection, logger: logger)
        return true
    }

    /// The user id when `stored` exists, is active and `password` matches; nil otherwise, after the
    /// same amount of work in every case (no user enumeration by timing). Runs in a hashing slot.
    func verify(_ password: String, against stored: StoredPassword?, limiter: PasswordHashingLimiter) async throws
        -> UUID?
    {
        let hasher = passwordHasher
        let hash = stored?.hash ?? dummyHash
        let matches = try await limiter.run { hasher.verify(password, against: hash) }
        guard let stored, stored.hash != nil, matches, stored.isActive else { return nil }
        return stored.userID
    }

    /// Why a sign-up was refused (shown on the page).
    enum SignUpProblem: Error, Equatable {
        case invalid(String)
        case usernameTaken
    }

    /// Creates the user and its `UserRegistered` outbox row in the caller's transaction; `passwordHash`
    /// was computed before the transaction began.
    func register(
        username: String, email: String, passwordHash hash: String, tenant: ResolvedTenant, clientID: String?,
        on connection: PostgresConnection, logger: Logger
    ) async throws -> UUID {
        let exists = try await connection.query(
            "SELECT 1 FROM users WHERE lower(username) = lower(\(username))", logger: logger)
        for try await _ in exists.decode(Int.self) { throw SignUpProblem.usernameTaken }
        let userID = UUID()
        do {
            try await connection.query(
                """
                INSERT INTO users (tenant_id, user_id, username, email, password_hash)
                VALUES (\(tenant.id), \(userID), \(username), \(email), \(hash))
                """, logger: logger)
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {
            throw SignUpProblem.usernameTaken
        }
        let event = UserRegistered(
            tenant: tenant.slug, userID: userID, username: username, method: .password, clientID: clientID,
            actor: .user(userID))
        try await outbox.append(
            CloudEvent(source: EventSource.tokenService, data: event), on: connection, logger: logger)
        return userID
    }
}

/// Sign-up field rules.
enum SignUpRules {
    /// Letters, digits and `._-@`, starting with a letter or digit, 1–64 characters.
    static func usernameProblem(_ username: String) -> String? {
        let bytes = Array(username.utf8)
        guard (1...64).contains(bytes.count), let first = bytes.first, isAlphanumeric(first),
            bytes.allSatisfy({ isAlphanumeric($0) || $0 == 0x2E || $0 == 0x5F || $0 == 0x2D || $0 == 0x40 })
        else { return "Choose a username of 1 to 64 letters, digits, dots, dashes, underscores or @." }
        return nil
    }

    static func emailProblem(_ email: String) -> String? {
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard email.utf8.count <= 254, parts.count == 2, !parts[0].isEmpty, parts[1].contains("."),
            !email.contains(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 } == true })
        else { return "Enter a valid email address." }
        return nil
    }

    /// Every rule of the tenant's password policy the password breaks, as sentences for the page; nil when none.
    static func passwordProblem(_ password: String, username: String, policy: PasswordPolicy) -> String? {
        let violations = policy.violations(of: password, username: username)
        guard !violations.isEmpty else { return nil }
        return violations.map { $0.message(policy) }.joined(separator: " ")
    }

    /// The hint under a new-password field, from the policy.
    static func passwordHint(_ policy: PasswordPolicy) -> String {
        var parts = ["At least \(policy.minLength) characters"]
        if policy.digitsOnly { parts[0] = "At least \(policy.minLength) digits" }
        if !policy.digitsOnly && policy.minCharacterClasses > 1 {
            parts.append(
                "mixing \(policy.minCharacterClasses) kinds of characters (lower case, upper case, digits, symbols)")
        }
        if policy.forbidSequences { parts.append("no sequences such as 1234") }
        if policy.differsFromUsername { parts.append("not your username") }
        return parts.joined(separator: ", ") + "."
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
    }
}
