import Foundation
import Hummingbird
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging

extension AdminController {
    /// `GET /admin/tenants/{tenant}/keys`: every stored signing key with its lifecycle (no key material).
    @Sendable func listKeys(_ request: Request, context: Context) async throws -> SigningKeyListView {
        let tenant = try context.requireTenant()
        let rotation = SigningKeyRotation(keys: try signingKeys(), database: database)
        let now = Date()
        let keys = try await rotation.list(tenant: tenant.id).map { SigningKeyView(key: $0, now: now) }
        return SigningKeyListView(
            tenantID: tenant.id, signingAlgorithm: tenant.policy.signingAlgorithm.rawValue, keys: keys)
    }

    /// `POST /admin/tenants/{tenant}/keys/rotate`: stages the next key (published at once, signing after
    /// the token service's publish delay); 409 while another key is staged.
    @Sendable func rotateKey(_ request: Request, context: Context) async throws -> EditedResponse<SigningKeyStagedView>
    {
        let (tenant, actor) = try authorized(context)
        guard let envelope = settings.keyEnvelope else {
            throw OAuthError(
                .serviceUnavailable, "temporarily_unavailable",
                "key rotation needs KEY_ENCRYPTION_KEY at the gateway; use `latchkey keys rotate` instead")
        }
        let algorithm = try await Self.requestedAlgorithm(request)
        let rotation = SigningKeyRotation(keys: TenantSigningKeys(envelope: envelope), database: database)
        let rotated: SigningKeyRotation.Rotation
        do {
            rotated = try await rotation.rotate(tenant: tenant.id, algorithm: algorithm, actor: actor.id)
        } catch let error as SigningKeyRotationError {
            switch error {
            case .alreadyStaged: throw OAuthError(.conflict, "invalid_request", error.description)
            case .unsupportedAlgorithm: throw OAuthError.invalidRequest(error.description)
            case .unknownTenant: throw OAuthError.notFound("unknown tenant")
            }
        }
        if rotated.policyVersion != nil { tenants.invalidate(tenant.slug) }
        context.logger.info(
            "signing key staged",
            metadata: [
                "tenant": .string(tenant.id), "kid": .string(rotated.key.kid), "actor": .string(actor.id),
            ])
        let staged = SigningKeyView(key: rotated.key, now: Date())
        return EditedResponse(
            status: .created,
            response: SigningKeyStagedView(key: staged, tenantID: tenant.id, policyVersion: rotated.policyVersion))
    }

    /// Public key facts only: the envelope is never used to open a private key here.
    private func signingKeys() throws -> TenantSigningKeys {
        TenantSigningKeys(
            envelope: try settings.keyEnvelope ?? KeyEnvelope(configuration: KeyMaterial.generateConfigurationValue()))
    }

    /// The algorithm of the required JSON body: `{}` for the policy's, or `{"algorithm": "RS256"}`. Nothing
    /// else is accepted, so an empty or misspelt body never stages a key by default.
    private static func requestedAlgorithm(_ request: Request) async throws -> JWSAlgorithm? {
        let body = try await AdminBody.read(request)
        let name = try AdminBody.checked { () throws(JSONRequestBody.Problem) in
            try body.requireOnly(["algorithm"])
            return try body.string("algorithm")
        }
        guard let name else { return nil }
        guard let algorithm = JWSAlgorithm(parsing: name), TenantPolicy.signingAlgorithms.contains(algorithm) else {
            throw OAuthError.invalidRequest(SigningKeyRotationError.unsupportedAlgorithm(name).description)
        }
        return algorithm
    }
}
