import Foundation
import HTTPTypes
import HummingbirdTesting
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import LatchkeyTestSupport
import Logging
import Testing

@testable import TokenService

/// Tenants signing with RS256 and EdDSA: issuance, JWKS, discovery, and verification the way the
/// sidecar (JWKS) and the gateway (keys from Postgres) do it, alg-confusion forgeries included.
@Suite struct SigningAlgorithmTests {
    static func policy(_ algorithm: JWSAlgorithm) -> String { #"{"signing_algorithm":"\#(algorithm.rawValue)"}"# }

    /// The sidecar's path: the JWKS document through ``JWKSCache`` into ``AccessTokenVerifier``.
    static func sidecarVerifier(_ fixture: TokenServiceHarness, jwks: JWKSet) throws -> AccessTokenVerifier {
        let cache = JWKSCache(logger: Logger(label: "test.jwks"), fetch: { _ in jwks })
        return try AccessTokenVerifier(
            configuration: .init(issuers: [fixture.issuer], audiences: [fixture.issuer]), keySource: cache)
    }

    /// The gateway's admin path: keys from `signing_keys` under the tenant's RLS scope.
    static func gatewayVerifier(_ fixture: TokenServiceHarness) -> AdminTokenVerifier {
        AdminTokenVerifier(
            keys: TenantSigningKeyStore(database: fixture.database), issuerBase: fixture.origin, platformTenant: nil)
    }

    @Test(arguments: [JWSAlgorithm.rs256, .edDSA])
    func tenantsSignPublishAndVerifyWithTheirAlgorithm(algorithm: JWSAlgorithm) async throws {
        try await TokenServiceHarness.run(policy: Self.policy(algorithm)) { client, fixture in
            let secret = try #require(try await fixture.insertClient("svc", scope: "admin api"))
            let issued = try await ClientCredentials.token(client, fixture, "svc", secret)
            #expect(try CompactJWS(parsing: issued.accessToken).header.alg == algorithm.rawValue)

            let set = try await fixture.jwks(client)
            #expect(set.keys.count == 1)
            let key = try #require(set.keys.first)
            #expect(key.kid == issued.kid)
            #expect(key.alg == algorithm.rawValue)
            #expect(key.use == "sig")
            #expect(!key.hasPrivateMembers)
            switch algorithm {
            case .rs256:
                #expect(key.kty == "RSA" && key.e == "AQAB" && key.x == nil && key.crv == nil)
                #expect(Base64URL.decode(key.n ?? "")?.count == 256)
            default:
                #expect(key.kty == "OKP" && key.crv == "Ed25519" && key.n == nil && key.y == nil)
                #expect(Base64URL.decode(key.x ?? "")?.count == 32)
            }

            try await client.execute(uri: "/t/\(fixture.tenant)/.well-known/openid-configuration", method: .get) {
                response in
                #expect(
                    TokenRequest.json(response)["id_token_signing_alg_values_supported"] as? [String] == [
                        algorithm.rawValue
                    ])
            }

            let sidecar = try Self.sidecarVerifier(fixture, jwks: set)
            #expect(try await sidecar.verify(issued.accessToken).clientID == "svc")
            let slug = try #require(TenantSlug(rawValue: fixture.tenant))
            let principal = try await Self.gatewayVerifier(fixture).verify(
                authorization: "Bearer \(issued.accessToken)", for: slug)
            #expect(principal.subject == "svc")

            // ID tokens are signed by the same key.
            let app = try await AuthorizationCodeGrantTests.publicApp(fixture)
            let user = try await fixture.insertUser()
            let verifier = PKCE.generateVerifier()
            let code = try await fixture.insertCode(
                clientID: app.clientID, userID: user, verifier: verifier, nonce: "n", dpopJKT: app.dpop.jkt)
            let (status, json) = try await app.redeem(client, fixture, code: code, verifier: verifier)
            #expect(status == 200, "\(json)")
            let idToken = try CompactJWS(parsing: try #require(json["id_token"] as? String))
            #expect(idToken.header.alg == algorithm.rawValue)
            try idToken.verify(using: key, allowedAlgorithms: [algorithm], requireDeclaredAlgorithm: true)
            #expect(try await sidecar.verify(try #require(json["access_token"] as? String)).jkt == app.dpop.jkt)
        }
    }

    @Test(arguments: [JWSAlgorithm.rs256, .edDSA, .es256])
    func algorithmConfusionAgainstTheTenantKeyIsRefusedEverywhere(algorithm: JWSAlgorithm) async throws {
        try await TokenServiceHarness.run(policy: Self.policy(algorithm)) { client, fixture in
            let secret = try #require(try await fixture.insertClient("svc", scope: "admin"))
            let issued = try await ClientCredentials.token(client, fixture, "svc", secret)
            let set = try await fixture.jwks(client)
            let key = try #require(set.keys.first)
            let payload = try CompactJWS(parsing: issued.accessToken).payload
            var forgeries = try AlgorithmConfusion.forgeries(against: key, payload: payload)
            if algorithm == .rs256 {
                // A genuine signature by the tenant's own RSA key, but with PSS: the key is declared for RS256 only.
                let stored = try await fixture.database.withTenantTransaction(fixture.tenant) { connection in
                    try await TenantSigningKeys(envelope: fixture.settings.keyEnvelope)
                        .activeKey(tenant: fixture.tenant, on: connection, logger: fixture.database.logger)
                }
                let pss = try SigningKey(algorithm: .ps256, pkcs8DER: try #require(stored).key.pkcs8DERRepresentation)
                forgeries.append(
                    (
                        "PS256 by the tenant key",
                        try CompactJWS.sign(
                            payload: payload, using: pss, header: JWSHeaderParameters(typ: "at+jwt", kid: key.kid))
                    ))
            }
            let sidecar = try Self.sidecarVerifier(fixture, jwks: set)
            let gateway = Self.gatewayVerifier(fixture)
            let slug = try #require(TenantSlug(rawValue: fixture.tenant))
            #expect(try await sidecar.verify(issued.accessToken).clientID == "svc")
            let introspect: @Sendable (String) async throws -> Bool? = { token in
                try await client.execute(
                    uri: "/t/\(fixture.tenant)/introspect", method: .post,
                    headers: TokenRequest.headers(basic: ("svc", secret)), body: TokenRequest.form([("token", token)])
                ) { TokenRequest.json($0)["active"] as? Bool }
            }
            #expect(try await introspect(issued.accessToken) == true)
            for (name, token) in forgeries {
                await #expect(throws: AccessTokenError.self, "sidecar: \(name)") { try await sidecar.verify(token) }
                await #expect(throws: OAuthError.self, "gateway: \(name)") {
                    try await gateway.verify(authorization: "Bearer \(token)", for: slug)
                }
                // The token service's own checks (introspection) do not take them either.
                #expect(try await introspect(token) == false, "introspect: \(name)")
            }
        }
    }
}
