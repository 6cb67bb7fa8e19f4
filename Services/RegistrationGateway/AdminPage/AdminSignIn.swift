import Foundation
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer

/// Checks an admin client's credentials for the admin page: the population that can get admin API tokens
/// (an active confidential client of the tenant or of the platform tenant whose scope includes `admin`),
/// its secret compared with the stored keyed hash in constant time, behind the shared ``LoginThrottle``.
struct AdminSignIn: Sendable {
    /// The outcome of one attempt.
    enum Outcome: Sendable {
        case signedIn(sessionID: String)
        case invalid
        case throttled(retryAfter: Int)
    }

    let database: Database
    let hasher: KeyedHasher
    let platformTenant: TenantSlug?
    let sessions: AdminSessions
    var throttle = LoginThrottle()

    /// Verifies `clientID`/`secret` for `tenant`'s page; counts failures per client id and per `source`.
    func signIn(
        clientID: String, secret: String, tenant: String, source: String, replacing oldSession: String?
    ) async throws -> Outcome {
        let candidate = try await adminClient(clientID, tenant: tenant)
        let subjects: [(LoginThrottle.Kind, String)] = [
            (.account, String(clientID.lowercased().prefix(256))), (.source, source),
        ]
        let logger = database.logger
        return try await database.withTenantTransaction(tenant) { connection in
            if let retryAfter = try await throttle.retryAfter(subjects, on: connection, logger: logger) {
                return .throttled(retryAfter: retryAfter)
            }
            // Hash even when there is no such client, so timing does not reveal which client ids exist.
            let matches = hasher.matches(secret, storedHash: candidate?.secretHash ?? hasher.hash(clientID))
            guard let candidate, matches else {
                try await throttle.recordFailure(subjects, on: connection, logger: logger)
                return .invalid
            }
            try await throttle.recordSuccess(account: subjects[0].1, on: connection, logger: logger)
            let id = try await sessions.start(
                clientID: candidate.clientID, clientTenant: candidate.tenant, tenant: tenant, replacing: oldSession,
                on: connection)
            return .signedIn(sessionID: id)
        }
    }

    private struct Candidate {
        let clientID: String
        let tenant: String
        let secretHash: String
    }

    /// The client in the page's tenant, else in the platform tenant, if it may administer: active, secret
    /// not expired, confidential with a client secret, `admin` among its registered scopes.
    private func adminClient(_ clientID: String, tenant: String) async throws -> Candidate? {
        guard !clientID.isEmpty, clientID.utf8.count <= 256 else { return nil }
        var tenants = [tenant]
        if let platform = platformTenant?.rawValue, platform != tenant { tenants.append(platform) }
        for home in tenants {
            guard
                let stored = try await database.withTenantTransaction(
                    home,
                    {
                        try await ClientRepository.find(clientID, tenant: home, on: $0, logger: database.logger)
                    })
            else { continue }
            let record = stored.record
            let method = record.metadata.tokenEndpointAuthMethod ?? .clientSecretBasic
            guard record.status == .active, record.clientType == .confidential, method.usesClientSecret,
                record.secretExpiresAt.map({ $0 > Date() }) ?? true,
                TenantPolicy.scopeTokens(record.metadata.scope ?? "").contains(AdminTokenVerifier.requiredScope),
                let hash = stored.clientSecretHash
            else { return nil }
            return Candidate(clientID: record.clientID, tenant: home, secretHash: hash)
        }
        return nil
    }
}
