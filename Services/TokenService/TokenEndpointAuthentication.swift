import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer

/// Client authentication at the token, revocation and introspection endpoints (RFC 6749 §2.3, RFC 7591 §2).
struct TokenEndpointAuthentication: Sendable {
    static let supportedMethods: [TokenEndpointAuthMethod] = [
        .clientSecretBasic, .clientSecretPost, .privateKeyJWT, .noAuthentication,
    ]

    let database: Database
    let hasher: KeyedHasher
    let assertions: ClientAssertionVerifier
    /// Client records for callers whose next statement re-checks the client itself (client_credentials).
    let cache: ClientCache

    /// The authenticated client of `tenant`; every failure is the same `invalid_client` (no client enumeration).
    /// With `cached`, a recently read record may stand in for the database's: only for a caller whose own
    /// statement then requires the client to be active with the same secret.
    func authenticate(
        request: Request, form: FormParameters, endpoints: TenantEndpoints, cached: Bool = false
    ) async throws -> StoredClient {
        let tenant = endpoints.tenant
        let presented = try Self.credentials(request: request, form: form)
        // Secrets, or none: an assertion's check uses up its `jti`, so it is checked once, against the database's
        // record. The grant's own statement re-checks the secret, and the stored metadata that says none is used.
        if cached,
            [.clientSecretBasic, .clientSecretPost, .noAuthentication].contains(presented.method),
            let client = cache.client(tenant: tenant, clientID: presented.clientID),
            var authenticated = try? await check(presented, against: client, endpoints: endpoints)
        {
            authenticated.fromCache = true
            return authenticated
        }
        // A cached record that does not authenticate may be stale (a new secret): the database decides.
        let generation = cache.generation
        let client = try await database.withTenantTransaction(tenant) { connection in
            try await ClientRepository.find(presented.clientID, on: connection, logger: database.logger)
        }
        guard let client else { throw Self.invalidClient(tenant: tenant) }
        let authenticated = try await check(presented, against: client, endpoints: endpoints)
        cache.store(authenticated, tenant: tenant, readAt: generation)
        return authenticated
    }

    /// `client` if the presented credentials authenticate it now; `invalid_client` otherwise.
    private func check(_ presented: Presented, against client: StoredClient, endpoints: TenantEndpoints) async throws
        -> StoredClient
    {
        let tenant = endpoints.tenant
        guard client.isUsable(at: Date()), client.authMethod == presented.method else {
            throw Self.invalidClient(tenant: tenant)
        }
        var client = client
        switch presented.method {
        case .noAuthentication:
            guard client.clientType == .public else { throw Self.invalidClient(tenant: tenant) }
        case .clientSecretBasic, .clientSecretPost:
            guard let secret = presented.secret,
                let matched = client.matchingSecretHash(secret, hasher: hasher, at: Date())
            else { throw Self.invalidClient(tenant: tenant) }
            client.authenticatedSecretHash = matched
        case .privateKeyJWT:
            guard let assertion = presented.assertion,
                await assertions.verify(assertion, client: client, endpoints: endpoints)
            else { throw Self.invalidClient(tenant: tenant) }
        }
        return client
    }

    static func invalidClient(tenant: String) -> OAuthError {
        OAuthError(
            .unauthorized, "invalid_client", "client authentication failed",
            headers: [.wwwAuthenticate: "Basic realm=\"\(tenant)\", charset=\"UTF-8\""])
    }

    struct Presented {
        let clientID: String
        let secret: String?
        let method: TokenEndpointAuthMethod
        var assertion: String? = nil
    }

    /// Which method the request used; more than one → `invalid_request` (RFC 6749 §2.3).
    static func credentials(request: Request, form: FormParameters) throws -> Presented {
        let authorizations = request.headers[values: .authorization]
        guard authorizations.count <= 1 else { throw OAuthError.invalidRequest("more than one Authorization header") }
        if let header = authorizations.first {
            guard form["client_secret"] == nil, form["client_assertion"] == nil else {
                throw OAuthError.invalidRequest("more than one client authentication method")
            }
            let parts = header.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "basic",
                let decoded = Data(base64Encoded: String(parts[1].trimmingOWS())),
                let text = String(validating: decoded, as: UTF8.self),
                let colon = text.firstIndex(of: ":"),
                // RFC 6749 §2.3.1: both halves are form-urlencoded before base64.
                let id = FormParameters.decode(text[..<colon]),
                let secret = FormParameters.decode(text[text.index(after: colon)...]),
                // U+0000 cannot reach PostgreSQL (it refuses the string): it is a malformed credential.
                !id.isEmpty, !id.utf8.contains(0), !secret.utf8.contains(0)
            else {
                throw OAuthError(
                    .unauthorized, "invalid_client", "malformed Basic credentials",
                    headers: [.wwwAuthenticate: "Basic charset=\"UTF-8\""])
            }
            if let formID = form["client_id"], formID != id {
                throw OAuthError.invalidRequest("client_id differs from the authenticated client")
            }
            return Presented(clientID: id, secret: secret, method: .clientSecretBasic)
        }
        if form["client_assertion"] != nil || form["client_assertion_type"] != nil {
            guard form["client_secret"] == nil else {
                throw OAuthError.invalidRequest("more than one client authentication method")
            }
            guard form["client_assertion_type"] == ClientAssertionVerifier.assertionType,
                let assertion = form["client_assertion"]
            else {
                throw OAuthError.invalidRequest(
                    "client_assertion_type must be \(ClientAssertionVerifier.assertionType)")
            }
            guard let id = ClientAssertionVerifier.claimedClientID(assertion) else {
                throw OAuthError(.unauthorized, "invalid_client", "malformed client assertion")
            }
            if let formID = form["client_id"], formID != id {
                throw OAuthError.invalidRequest("client_id differs from the assertion's subject")
            }
            return Presented(clientID: id, secret: nil, method: .privateKeyJWT, assertion: assertion)
        }
        guard let id = form["client_id"] else {
            throw OAuthError(
                .unauthorized, "invalid_client", "client authentication required",
                headers: [.wwwAuthenticate: "Basic charset=\"UTF-8\""])
        }
        if let secret = form["client_secret"] {
            return Presented(clientID: id, secret: secret, method: .clientSecretPost)
        }
        return Presented(clientID: id, secret: nil, method: .noAuthentication)
    }
}
