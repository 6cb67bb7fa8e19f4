import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer

/// RFC 8414 / OpenID Connect discovery and the tenant's JWKS.
struct DiscoveryController: Sendable {
    let settings: TokenServiceSettings
    let keyStore: TenantKeyStore
    let directory: TenantDirectory

    /// `/t/{tenant}/.well-known/openid-configuration` and `/t/{tenant}/jwks` (tenant-resolved group).
    func addTenantRoutes(to group: RouterGroup<LatchkeyRequestContext>) {
        group.get(".well-known/openid-configuration") { _, context in
            try await metadataResponse(for: context.requireTenant())
        }
        group.get("jwks") { _, context in
            let set = try await keyStore.jwks(for: try context.requireTenant())
            return try JSONResponse.make(
                set, contentType: "application/jwk-set+json", cacheControl: "public, max-age=\(Self.jwksMaxAgeSeconds)")
        }
    }

    /// RFC 8414 §3.1 path-inserted form: `/.well-known/oauth-authorization-server/t/{tenant}`.
    func addRootRoutes(to router: Router<LatchkeyRequestContext>) {
        router.get(".well-known/oauth-authorization-server/t/:tenant") { _, context in
            guard let raw = context.parameters.get("tenant"), let slug = TenantSlug(raw),
                let tenant = try await directory.tenant(slug), tenant.status == "active"
            else { throw OAuthError.notFound("unknown tenant") }
            return try await metadataResponse(for: tenant)
        }
    }

    /// How long clients may cache the JWKS; a staged key must be published at least this long before
    /// it signs (`SIGNING_KEY_PUBLISH_DELAY_SECONDS`, default 600, covers it).
    static let jwksMaxAgeSeconds = 300

    func metadataResponse(for tenant: ResolvedTenant) async throws -> Response {
        let algorithms = try await signingAlgorithms(for: tenant)
        return try JSONResponse.make(
            metadata(for: tenant, signingAlgorithms: algorithms), cacheControl: "public, max-age=300")
    }

    /// What the tenant's tokens may be signed with: the signer's algorithm first, then those of the
    /// other published keys (a rotation to another algorithm) and the policy's.
    func signingAlgorithms(for tenant: ResolvedTenant) async throws -> [String] {
        var names: [String] = []
        for key in try await keyStore.publishedKeys(for: tenant) {
            if let alg = key.jwk.alg, !names.contains(alg) { names.append(alg) }
        }
        let policy = tenant.policy.signingAlgorithm.rawValue
        if !names.contains(policy) { names.append(policy) }
        return names
    }

    /// RFC 8414 metadata of every endpoint and capability the token service has, plus the OpenID Connect
    /// members a relying party expects.
    func metadata(for tenant: ResolvedTenant, signingAlgorithms: [String]) -> AuthorizationServerMetadata {
        let urls = TenantEndpoints(settings: settings, tenant: tenant.id)
        let scopes = Array(Set(tenant.policy.allowedScopes + ["openid", "dcr"])).sorted()
        return AuthorizationServerMetadata(
            issuer: urls.issuer,
            authorizationEndpoint: urls.authorization,
            tokenEndpoint: urls.token,
            jwksURI: urls.jwks,
            registrationEndpoint: urls.registration,
            revocationEndpoint: urls.revocation,
            introspectionEndpoint: urls.introspection,
            userinfoEndpoint: urls.userinfo,
            endSessionEndpoint: urls.endSession,
            scopesSupported: scopes,
            responseTypesSupported: ["code"],
            responseModesSupported: ["query"],
            promptValuesSupported: ["none", "login", "consent", "select_account"],
            grantTypesSupported: [GrantType.authorizationCode, .refreshToken, .clientCredentials].map(\.rawValue),
            tokenEndpointAuthMethodsSupported: TokenEndpointAuthentication.supportedMethods.map(\.rawValue),
            revocationEndpointAuthMethodsSupported: TokenEndpointAuthentication.supportedMethods.map(\.rawValue),
            introspectionEndpointAuthMethodsSupported: TokenEndpointAuthentication.supportedMethods
                .filter { $0 != .noAuthentication }.map(\.rawValue),
            codeChallengeMethodsSupported: tenant.policy.pkce.challengeMethods,
            dpopSigningAlgValuesSupported: JWSAlgorithm.allCases.map(\.rawValue),
            authorizationResponseIssParameterSupported: true,
            subjectTypesSupported: ["public"],
            idTokenSigningAlgValuesSupported: signingAlgorithms,
            claimsSupported: [
                "sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "preferred_username", "name", "email",
            ])
    }
}

/// The discovery document (RFC 8414 §2, OpenID Connect Discovery §3, RFC 9449 §5.1, RFC 9207 §3).
struct AuthorizationServerMetadata: Codable, Sendable, Equatable {
    var issuer: String
    var authorizationEndpoint: String
    var tokenEndpoint: String
    var jwksURI: String
    var registrationEndpoint: String
    var revocationEndpoint: String
    var introspectionEndpoint: String
    var userinfoEndpoint: String
    var endSessionEndpoint: String
    var scopesSupported: [String]
    var responseTypesSupported: [String]
    var responseModesSupported: [String]
    var promptValuesSupported: [String]
    var grantTypesSupported: [String]
    var tokenEndpointAuthMethodsSupported: [String]
    var revocationEndpointAuthMethodsSupported: [String]
    var introspectionEndpointAuthMethodsSupported: [String]
    var codeChallengeMethodsSupported: [String]
    var dpopSigningAlgValuesSupported: [String]
    var authorizationResponseIssParameterSupported: Bool
    var subjectTypesSupported: [String]
    var idTokenSigningAlgValuesSupported: [String]
    var claimsSupported: [String]

    enum CodingKeys: String, CodingKey {
        case issuer
        case authorizationEndpoint = "authorization_endpoint"
        case tokenEndpoint = "token_endpoint"
        case jwksURI = "jwks_uri"
        case registrationEndpoint = "registration_endpoint"
        case revocationEndpoint = "revocation_endpoint"
        case introspectionEndpoint = "introspection_endpoint"
        case userinfoEndpoint = "userinfo_endpoint"
        case endSessionEndpoint = "end_session_endpoint"
        case scopesSupported = "scopes_supported"
        case responseTypesSupported = "response_types_supported"
        case responseModesSupported = "response_modes_supported"
        case promptValuesSupported = "prompt_values_supported"
        case grantTypesSupported = "grant_types_supported"
        case tokenEndpointAuthMethodsSupported = "token_endpoint_auth_methods_supported"
        case revocationEndpointAuthMethodsSupported = "revocation_endpoint_auth_methods_supported"
        case introspectionEndpointAuthMethodsSupported = "introspection_endpoint_auth_methods_supported"
        case codeChallengeMethodsSupported = "code_challenge_methods_supported"
        case dpopSigningAlgValuesSupported = "dpop_signing_alg_values_supported"
        case authorizationResponseIssParameterSupported = "authorization_response_iss_parameter_supported"
        case subjectTypesSupported = "subject_types_supported"
        case idTokenSigningAlgValuesSupported = "id_token_signing_alg_values_supported"
        case claimsSupported = "claims_supported"
    }
}

/// JSON responses with explicit caching headers (tokens: `no-store`; metadata: cacheable).
enum JSONResponse {
    static func make(
        _ value: some Encodable, status: HTTPResponse.Status = .ok, contentType: String = "application/json",
        cacheControl: String = "no-store", extraHeaders: HTTPFields = [:]
    ) throws -> Response {
        // The bytes `JSONEncoder` writes with sorted keys and unescaped slashes, in one pass (every token
        // response comes through here).
        let data: Data
        if let compact = try CompactJSONEncoder.encode(value, dates: .deferredToDate) {
            data = compact
        } else {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            data = try encoder.encode(value)
        }
        var headers: HTTPFields = [.contentType: contentType, .cacheControl: cacheControl]
        if cacheControl == "no-store" { headers[.pragma] = "no-cache" }
        headers.append(contentsOf: extraHeaders)
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
