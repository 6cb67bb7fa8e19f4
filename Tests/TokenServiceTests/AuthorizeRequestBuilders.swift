import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyTestSupport
import PostgresNIO
import Testing

@testable import TokenService

/// Builders for authorization requests in tests.
enum AuthorizeRequest {
    static func query(_ pairs: [(String, String)]) -> String {
        String(buffer: TokenRequest.form(pairs))
    }

    /// A PKCE (S256) code request of `clientID`, with optional extra or replaced parameters.
    static func path(
        _ fixture: TokenServiceHarness, clientID: String, redirectURI: String = "com.example.app:/cb",
        verifier: String, state: String = "st-123", extra: [(String, String)] = [], omit: Set<String> = []
    ) -> String {
        var pairs: [(String, String)] = [
            ("response_type", "code"), ("client_id", clientID), ("redirect_uri", redirectURI),
            ("scope", "openid profile"),
            ("state", state), ("nonce", "n-42"), ("code_challenge", PKCE.s256Challenge(for: verifier)),
            ("code_challenge_method", "S256"),
        ]
        let replaced = Set(extra.map(\.0))
        pairs.removeAll { omit.contains($0.0) || replaced.contains($0.0) }
        pairs.append(contentsOf: extra)
        return "/t/\(fixture.tenant)/authorize?" + query(pairs)
    }
}

extension TokenServiceHarness {
    /// A user with a password, as sign-up would create it.
    @discardableResult
    func insertUser(username: String, password: String) async throws -> UUID {
        let id = try await insertUser(username: username)
        let hash = try settings.passwordHasher.hash(password)
        try await database.withTenantTransaction(tenant) { connection in
            try await connection.query(
                "UPDATE users SET password_hash = \(hash) WHERE user_id = \(id)", logger: database.logger)
        }
        return id
    }

    /// A public native client for the code flow. First-party by default, so flows that are not about
    /// consent see no consent page; `firstParty: false` with `owner` makes it a user's own DCR instance.
    func insertPublicApp(
        _ id: String = "app", redirectURIs: [String] = ["com.example.app:/cb"], firstParty: Bool = true,
        owner: UUID? = nil, scope: String = "openid profile"
    ) async throws -> NativeApp {
        try await insertClient(
            id, authMethod: .noAuthentication, grantTypes: [.authorizationCode, .refreshToken], scope: scope,
            redirectURIs: redirectURIs, dpopBound: true, firstParty: firstParty, authenticatedUser: owner)
        return try NativeApp(clientID: id)
    }

    /// Counts rows of a tenant table matching a SQL condition on one text column.
    func count(_ sql: String) async throws -> Int {
        try await database.withTenantTransaction(tenant) { connection in
            let rows = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: database.logger)
            for try await value in rows.decode(Int.self) { return value }
            return 0
        }
    }
}
