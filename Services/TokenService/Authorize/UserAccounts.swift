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

    init(passwordHasher: PasswordHasher, outbox: OutboxWriter) throws {
        self.passwordHasher = passwordHasher
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
        username: String, email: String, passwordHash hash: String, tenant: ResolvedTenant, clientID: String,
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

    /// At least 12 characters, at most 1024 bytes, not all of one character class, not the username.
    static func passwordProblem(_ password: String, username: String) -> String? {
        guard password.count >= 12 else { return "The password must have at least 12 characters." }
        guard password.utf8.count <= 1024 else { return "The password is too long." }
        var classes = Set<Int>()
        for character in password {
            if character.isLowercase {
                classes.insert(0)
            } else if character.isUppercase {
                classes.insert(1)
            } else if character.isNumber {
                classes.insert(2)
            } else {
                classes.insert(3)
            }
        }
        guard classes.count >= 2 else {
            return "The password must mix character kinds (letters with digits or symbols, or upper and lower case)."
        }
        guard password.lowercased() != username.lowercased() else { return "The password must not be your username." }
        return nil
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
    }
}
