import Foundation
import HTTPTypes
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer

/// RFC 6749 §4.4: a confidential client obtains a token for itself.
struct ClientCredentialsGrant: Sendable {
    let issuer: TokenIssuer
    let database: Database

    func grant(_ grant: GrantContext, signer: (kid: String, key: SigningKey)) async throws -> TokenResponse {
        guard grant.client.clientType == .confidential else {
            throw OAuthError(.badRequest, "unauthorized_client", "client_credentials needs a confidential client")
        }
        // `dcr` names a user; it never comes from client credentials.
        let registered = grant.client.registeredScopes.filter { $0 != "dcr" }
        let scopes: [String]
        if let requested = grant.form["scope"] {
            scopes = TenantPolicy.scopeTokens(requested)
            guard !scopes.isEmpty, scopes.allSatisfy(registered.contains) else {
                throw OAuthError.invalidScope("requested scope exceeds the client's registered scope")
            }
        } else {
            scopes = registered
        }
        let request = IssuanceRequest(
            client: grant.client, userID: nil, scopes: scopes, grantType: .clientCredentials, jkt: grant.proof?.jkt)
        return try await issuer.issueAccessToken(
            request, tenant: grant.tenant, endpoints: grant.endpoints, signer: signer, database: database)
    }
}
