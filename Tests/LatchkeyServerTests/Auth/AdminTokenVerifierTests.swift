import Foundation
import Hummingbird
import LatchkeyTestSupport
import Testing

@testable import LatchkeyCore
@testable import LatchkeyPersistence
@testable import LatchkeyServer

/// Admin access tokens (RFC 9068, scope `admin`) checked against the issuing tenant's keys in PostgreSQL.
@Suite struct AdminTokenVerifierTests {
    static let issuer = "https://tokens.example"

    struct Setup {
        var tenant: String
        var platform: String
        var tenantAdmin: AdminTokenMinter
        var platformAdmin: AdminTokenMinter
        var database: Database

        func verifier(audiences: Set<String>? = nil, clock: any WallClock = SystemWallClock()) -> AdminTokenVerifier {
            AdminTokenVerifier(
                keys: TenantSigningKeyStore(database: database, ttl: .zero),
                issuerBase: AdminTokenVerifierTests.issuer + "/",
                platformTenant: TenantSlug(rawValue: platform), audiences: audiences, clock: clock)
        }
    }

    static func withSetup(_ body: (Setup) async throws -> Void) async throws {
        try await TestDatabase.withApp { database in
            let tenant = TestEnvironment.uniqueTenant("adm")
            let platform = TestEnvironment.uniqueTenant("plat")
            for slug in [tenant, platform] { try await TestDatabase.createTenant(slug, in: database) }
            try await body(
                Setup(
                    tenant: tenant, platform: platform,
                    tenantAdmin: try await AdminTokenMinter.make(tenant: tenant, issuerBase: issuer, in: database),
                    platformAdmin: try await AdminTokenMinter.make(tenant: platform, issuerBase: issuer, in: database),
                    database: database))
        }
    }

    /// The OAuth error `body` fails with (status and code), or nil when it succeeds.
    static func failure(_ body: () async throws -> AdminPrincipal) async -> OAuthError? {
        do {
            _ = try await body()
            return nil
        } catch let error as OAuthError {
            return error
        } catch {
            Issue.record("unexpected error \(error)")
            return nil
        }
    }

    @Test func acceptsTenantAndPlatformAdminsForTheirTenants() async throws {
        try await Self.withSetup { setup in
            let verifier = setup.verifier()
            let tenant = try #require(TenantSlug(rawValue: setup.tenant))
            let own = try await verifier.verify(authorization: try setup.tenantAdmin.authorization(), for: tenant)
            #expect(
                own
                    == AdminPrincipal(
                        issuerTenant: tenant, subject: "admin-cli", clientID: "admin-cli", isPlatformAdmin: false))
            let platform = try await verifier.verify(
                authorization: "bearer \(try setup.platformAdmin.token())", for: tenant)
            #expect(platform.isPlatformAdmin)
            #expect(platform.issuerTenant.rawValue == setup.platform)
            // Without kid the tenant's active key is used.
            let withoutKid = try CompactJWS.sign(
                payload: Data(CanonicalJSON.encode(.object(setup.tenantAdmin.claims()))), using: setup.tenantAdmin.key,
                header: JWSHeaderParameters(typ: "at+jwt"))
            _ = try await verifier.verify(authorization: "Bearer \(withoutKid)", for: tenant)
        }
    }

    @Test func refusesTokensOfOtherTenantsAndForeignIssuers() async throws {
        try await Self.withSetup { setup in
            let verifier = setup.verifier()
            let other = try #require(TenantSlug(rawValue: TestEnvironment.uniqueTenant("other")))
            let refused = await Self.failure {
                try await verifier.verify(authorization: try setup.tenantAdmin.authorization(), for: other)
            }
            #expect(refused?.status == .unauthorized)
            #expect(refused?.code == "invalid_token")
            #expect(refused?.headers[.wwwAuthenticate] == #"Bearer realm="latchkey", error="invalid_token""#)
            var foreign = setup.tenantAdmin.claims()
            foreign["iss"] = .string("https://evil.example/t/\(setup.tenant)")
            let tenant = try #require(TenantSlug(rawValue: setup.tenant))
            #expect(
                await Self.failure {
                    try await verifier.verify(
                        authorization: "Bearer \(try setup.tenantAdmin.token(foreign))", for: tenant)
                }?.code == "invalid_token")
        }
    }

    @Test func checksKeyStatusAlgorithmAndSignature() async throws {
        try await Self.withSetup { setup in
            let verifier = setup.verifier()
            let tenant = try #require(TenantSlug(rawValue: setup.tenant))
            let next = try await AdminTokenMinter.make(
                tenant: setup.tenant, issuerBase: Self.issuer, status: "next", in: setup.database)
            let retiredGone = try await AdminTokenMinter.make(
                tenant: setup.tenant, issuerBase: Self.issuer, status: "retired",
                publishUntil: Date().addingTimeInterval(-60), in: setup.database)
            let retiredValid = try await AdminTokenMinter.make(
                tenant: setup.tenant, issuerBase: Self.issuer, status: "retired",
                publishUntil: Date().addingTimeInterval(3600), in: setup.database)
            _ = try await verifier.verify(authorization: try retiredValid.authorization(), for: tenant)
            for refused in [next, retiredGone] {
                #expect(
                    await Self.failure {
                        try await verifier.verify(authorization: try refused.authorization(), for: tenant)
                    }?
                    .code == "invalid_token")
            }
            // Another key under the stored kid (a forgery), and another algorithm under it.
            let impostors = [
                AdminTokenMinter(
                    tenant: setup.tenant, issuerBase: Self.issuer, kid: setup.tenantAdmin.kid,
                    key: try SigningKey.generate()),
                AdminTokenMinter(
                    tenant: setup.tenant, issuerBase: Self.issuer, kid: setup.tenantAdmin.kid,
                    key: try SigningKey.generate(.edDSA)),
            ]
            for impostor in impostors {
                #expect(
                    await Self.failure {
                        try await verifier.verify(authorization: try impostor.authorization(), for: tenant)
                    }?
                    .code == "invalid_token")
            }
            let header = Base64URL.encode(Data(#"{"alg":"none","typ":"at+jwt"}"#.utf8))
            let payload = Base64URL.encode(CanonicalJSON.encode(.object(setup.tenantAdmin.claims())))
            #expect(
                await Self.failure {
                    try await verifier.verify(authorization: "Bearer \(header).\(payload).", for: tenant)
                }?
                .code == "invalid_token")
        }
    }

    @Test func checksTimesTypeAudienceBindingAndScope() async throws {
        try await Self.withSetup { setup in
            let now = Date()
            let clock = FixedWallClock(now)
            let verifier = setup.verifier(audiences: ["\(Self.issuer)/t/\(setup.tenant)/audit"], clock: clock)
            let tenant = try #require(TenantSlug(rawValue: setup.tenant))
            let admin = setup.tenantAdmin
            func code(_ claims: [String: JSONValue], typ: String? = "at+jwt") async -> String? {
                await Self.failure {
                    try await verifier.verify(authorization: "Bearer \(try admin.token(claims, typ: typ))", for: tenant)
                }?.code
            }
            var claims = admin.claims(now: now)
            #expect(await code(claims) == nil)
            #expect(await code(claims, typ: "application/at+jwt") == nil)
            #expect(await code(claims, typ: "JWT") == "invalid_token")
            #expect(await code(claims, typ: nil) == "invalid_token")
            claims["aud"] = ["https://other.example", .string("\(Self.issuer)/t/\(setup.tenant)/audit")]
            #expect(await code(claims) == nil, "one matching audience in a list is enough")

            var changed = admin.claims(now: now)
            changed["aud"] = "https://other.example"
            #expect(await code(changed) == "invalid_token")
            changed = admin.claims(now: now)
            changed["exp"] = .number(now.timeIntervalSince1970 - 31)
            #expect(await code(changed) == "invalid_token")
            changed["exp"] = .number(now.timeIntervalSince1970 - 10)
            #expect(await code(changed) == nil, "30 s leeway")
            changed = admin.claims(now: now)
            changed["nbf"] = .number(now.timeIntervalSince1970 + 120)
            #expect(await code(changed) == "invalid_token")
            changed = admin.claims(now: now)
            changed["iat"] = .number(now.timeIntervalSince1970 + 120)
            #expect(await code(changed) == "invalid_token")
            changed = admin.claims(now: now)
            changed["cnf"] = ["jkt": "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"]
            #expect(await code(changed) == "invalid_token", "DPoP-bound tokens are not bearer tokens")
            changed = admin.claims(now: now)
            changed["sub"] = nil
            #expect(await code(changed) == "invalid_token")
            changed = admin.claims(now: now)
            changed["exp"] = "tomorrow"
            #expect(await code(changed) == "invalid_token")

            let unscoped = await Self.failure {
                try await verifier.verify(
                    authorization: "Bearer \(try admin.token(admin.claims(scope: "administrator", now: now)))",
                    for: tenant)
            }
            #expect(unscoped?.status == .forbidden)
            #expect(unscoped?.code == "insufficient_scope")
            #expect(unscoped?.headers[.wwwAuthenticate]?.contains(#"scope="admin""#) == true)
        }
    }

    @Test func refusesMissingAndMalformedCredentials() async throws {
        try await Self.withSetup { setup in
            let verifier = setup.verifier()
            let tenant = try #require(TenantSlug(rawValue: setup.tenant))
            let missing = await Self.failure { try await verifier.verify(authorization: nil, for: tenant) }
            #expect(missing?.status == .unauthorized)
            #expect(missing?.headers[.wwwAuthenticate] == #"Bearer realm="latchkey""#)
            for header in [
                "", "Bearer", "Bearer ", "Basic abc", "DPoP abc", "Bearer a.b", "Bearer ...", "Bearer e30.e30.e30",
                "Bearer " + String(repeating: "x", count: AdminTokenVerifier.maximumTokenLength + 1),
            ] {
                let error = await Self.failure { try await verifier.verify(authorization: header, for: tenant) }
                #expect(error?.status == .unauthorized, "\(header.prefix(30))")
            }
        }
    }
}
