import Foundation
import Testing

@testable import LatchkeyCore

@Suite struct TenantPolicyTests {
    private func decode(_ json: String) throws -> TenantPolicy {
        try LatchkeyJSON.decode(TenantPolicy.self, from: Data(json.utf8))
    }

    @Test func emptyObjectGivesEveryDefault() throws {
        let policy = try decode("{}")
        #expect(policy == TenantPolicy.default)
        #expect(policy.version == 1)
        #expect(policy.registrationMechanisms == [.userToken, .initialAccessToken])
        #expect(!policy.allows(.open))
        #expect(policy.allowedScopes == ["openid", "profile", "email", "offline_access"])
        #expect(policy.disallowedScopeBehavior == .reject)
        #expect(policy.allowedGrantTypes == [.authorizationCode, .refreshToken])
        #expect(policy.maxClientsPerUser == 10)
        #expect(policy.clientSecretLifetime == 0)
        #expect(policy.rotateRegistrationAccessToken)
        #expect(policy.inactiveClientTTL == 7_776_000)
        #expect(policy.pkce == PKCEPolicy(requiredFor: .publicAndNative, allowPlain: false))
        #expect(policy.dpop == DPoPPolicy(required: false, nonceRequired: false))
        #expect(policy.tokenLifetimes.accessToken == 600)
        #expect(policy.tokenLifetimes.refreshToken == 2_592_000)
        #expect(policy.tokenLifetimes.dcrAccessToken == 300)
        #expect(policy.tokenLifetimes.authorizationCode == 60)
        #expect(policy.tokenLifetimes.idToken == 600)
        #expect(policy.consent == ConsentPolicy(required: false, rememberFor: 7_776_000))
        #expect(policy.rateLimits.registration == RateLimit(perTenantPerMinute: 600, perSourcePerMinute: 30))
        #expect(policy.rateLimits.login == RateLimit(perTenantPerMinute: 3000, perSourcePerMinute: 60))
        #expect(policy.rateLimits.loginPerUserPerMinute == 10)
        #expect(policy.trustedSoftwareStatementIssuers.isEmpty)
        #expect(policy.upstreamIdentityProviders.isEmpty)
        #expect(policy.branding == TenantBranding())
        #expect(policy.registrationCORSOrigins.isEmpty)
        #expect(policy.validate().isEmpty)
    }

    @Test func nullMembersAndEmptySectionsAlsoMeanDefaults() throws {
        let policy = try decode(
            #"{"version":null,"pkce":{},"dpop":{},"token_lifetimes":{},"consent":{},"rate_limits":{"login":{}},"branding":{}}"#
        )
        #expect(policy == TenantPolicy.default)
    }

    @Test func partialPolicyKeepsDefaultsForTheRest() throws {
        let policy = try decode(
            """
            {"version": 7, "registration_mechanisms": ["open"], "disallowed_scope_behavior": "trim",
             "pkce": {"allow_plain": true}, "dpop": {"nonce_required": true},
             "token_lifetimes": {"access_token": 120},
             "rate_limits": {"login": {"per_source_per_minute": 5}},
             "branding": {"primary_color": "#0a6"}}
            """)
        #expect(policy.version == 7)
        #expect(policy.registrationMechanisms == [.open])
        #expect(policy.disallowedScopeBehavior == .trim)
        #expect(policy.pkce.allowPlain && policy.pkce.requiredFor == .publicAndNative)
        #expect(policy.dpop.nonceRequired && !policy.dpop.required)
        #expect(policy.tokenLifetimes.accessToken == 120)
        #expect(policy.tokenLifetimes.refreshToken == 2_592_000)
        #expect(policy.rateLimits.login == RateLimit(perTenantPerMinute: 3000, perSourcePerMinute: 5))
        #expect(policy.rateLimits.registration == RateLimits.defaultRegistration)
        #expect(policy.branding.primaryColor == "#0a6")
        #expect(policy.allowedScopes == TenantPolicy.default.allowedScopes)
        #expect(policy.validate().isEmpty)
    }

    @Test func encodesSnakeCaseAndRoundTrips() throws {
        let policy = TenantPolicy(
            version: 3, registrationMechanisms: [.userToken, .open], allowedScopes: ["openid", "orders:read"],
            disallowedScopeBehavior: .trim, allowedGrantTypes: [.authorizationCode, .refreshToken, .clientCredentials],
            maxClientsPerUser: 0, clientSecretLifetime: 86_400, rotateRegistrationAccessToken: false,
            inactiveClientTTL: 0, pkce: PKCEPolicy(requiredFor: .all),
            dpop: DPoPPolicy(required: true, nonceRequired: true),
            tokenLifetimes: TokenLifetimes(accessToken: 300), consent: ConsentPolicy(required: true, rememberFor: 0),
            rateLimits: RateLimits(loginPerUserPerMinute: 3),
            trustedSoftwareStatementIssuers: [
                TrustedSoftwareStatementIssuer(
                    issuer: "https://ss.acme.example", keys: .jwksURI("https://ss.acme.example/jwks")),
                TrustedSoftwareStatementIssuer(
                    issuer: "acme-build",
                    keys: .jwks([
                        "keys": [["kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"]]
                    ])),
            ],
            upstreamIdentityProviders: [
                UpstreamIdentityProvider(
                    id: "google", displayName: "Google", issuer: "https://accounts.google.com",
                    clientID: "123.apps.googleusercontent.com", clientSecretRef: "env:GOOGLE_CLIENT_SECRET")
            ],
            branding: TenantBranding(name: "Acme", logoURL: "https://acme.example/logo.svg", primaryColor: "#112233"),
            registrationCORSOrigins: ["https://app.acme.example", "http://localhost:5173"])
        #expect(policy.validate().isEmpty, "\(policy.validate())")

        let data = try LatchkeyJSON.encode(policy)
        let tree = try LatchkeyJSON.decode(JSONValue.self, from: data)
        let expectedKeys: Set<String> = [
            "version", "registration_mechanisms", "allowed_scopes", "disallowed_scope_behavior", "allowed_grant_types",
            "max_clients_per_user", "client_secret_lifetime", "rotate_registration_access_token", "inactive_client_ttl",
            "pkce", "dpop", "token_lifetimes", "consent", "rate_limits", "trusted_software_statement_issuers",
            "upstream_identity_providers", "branding", "registration_cors_origins", "signing_algorithm",
            "password_policy", "client_secret_rotation_window", "client_secret_overlap",
        ]
        #expect(Set(tree.objectValue?.keys.map { $0 } ?? []) == expectedKeys)
        #expect(tree["pkce"]?["required_for"] == "all")
        #expect(tree["dpop"]?["nonce_required"] == true)
        #expect(tree["token_lifetimes"]?["dcr_access_token"] == 300)
        #expect(tree["rate_limits"]?["registration"]?["per_source_per_minute"] == 30)
        #expect(
            tree["upstream_identity_providers"]?.arrayValue?.first?["client_secret_ref"] == "env:GOOGLE_CLIENT_SECRET")
        #expect(
            tree["trusted_software_statement_issuers"]?.arrayValue?.first?["jwks_uri"] == "https://ss.acme.example/jwks"
        )
        #expect(tree["branding"]?["logo_url"] == "https://acme.example/logo.svg")
        #expect(try LatchkeyJSON.decode(TenantPolicy.self, from: data) == policy)
        #expect(try TenantPolicy.parse(data) == policy)
    }

    @Test(arguments: [
        (
            #"{"registration_mechanisms":["user_token","sms"]}"#,
            #"registration_mechanisms[1]: unknown registration mechanism "sms"; expected one of"#
        ),
        (#"{"registration_mechanisms":["admin"]}"#, #""admin" is not a dynamic registration mechanism"#),
        (#"{"disallowed_scope_behavior":"ignore"}"#, #"unknown disallowed scope behavior "ignore""#),
        (#"{"allowed_grant_types":["password"]}"#, #"allowed_grant_types[0]: unknown grant type "password""#),
        (#"{"pkce":{"required_for":"public"}}"#, #"pkce.required_for: unknown PKCE requirement "public""#),
        (#"{"max_clients_per_user":"ten"}"#, "max_clients_per_user: expected an integer"),
        (#"{"signing_algorithm":"HS256"}"#, #"signing_algorithm: unknown signing algorithm "HS256"; expected one of"#),
        (#"{"signing_algorithm":"none"}"#, #"unknown signing algorithm "none""#),
        (#"{"signing_algorithm":"rs256"}"#, #"unknown signing algorithm "rs256""#),
        (#"{"trusted_software_statement_issuers":[{"issuer":"x"}]}"#, "exactly one of jwks or jwks_uri"),
        (
            #"{"upstream_identity_providers":[{"id":"g","issuer":"https://g.example","client_secret":"s"}]}"#,
            "client_id: required member is missing"
        ),
    ])
    func unknownValuesFailToDecodeWithAClearMessage(json: String, message: String) throws {
        let error = try #require(throws: DecodingError.self) { try decode(json) }
        #expect(error.readableDescription.contains(message), "got: \(error.readableDescription)")
        guard
            case .malformed(let description) = try #require(
                throws: TenantPolicyError.self,
                performing: {
                    try TenantPolicy.parse(Data(json.utf8))
                })
        else {
            Issue.record("parse must report malformed JSON as .malformed")
            return
        }
        #expect(description.contains(message))
    }

    @Test func validateReportsEveryProblemWithItsPath() throws {
        var policy = TenantPolicy()
        policy.version = 0
        policy.allowedScopes = ["openid", "dcr", "bad scope", ""]
        policy.allowedGrantTypes = [.authorizationCode, .implicit]
        policy.maxClientsPerUser = -1
        policy.clientSecretLifetime = -5
        policy.clientSecretRotationWindow = -1
        policy.clientSecretOverlap = 2_592_001
        policy.inactiveClientTTL = TenantPolicy.maximumDurationSeconds + 1
        policy.tokenLifetimes = TokenLifetimes(
            accessToken: 0, refreshToken: -1, dcrAccessToken: 7200, authorizationCode: 601, idToken: -60)
        policy.consent.rememberFor = -1
        policy.rateLimits.registration.perSourcePerMinute = -1
        policy.rateLimits.loginPerUserPerMinute = -2
        policy.trustedSoftwareStatementIssuers = [
            TrustedSoftwareStatementIssuer(issuer: "", keys: .jwksURI("http://insecure.example/jwks")),
            TrustedSoftwareStatementIssuer(issuer: "a", keys: .jwks(["keys": [["kty": "EC", "d": "secret-scalar"]]])),
            TrustedSoftwareStatementIssuer(issuer: "a", keys: .jwks(["nokeys": true])),
        ]
        policy.upstreamIdentityProviders = [
            UpstreamIdentityProvider(
                id: "Google", displayName: "", issuer: "http://accounts.google.com", clientID: "",
                clientSecretRef: "hunter2", scopes: ["email"])
        ]
        policy.branding = TenantBranding(name: "", logoURL: "http://acme.example/logo.png", primaryColor: "blue")
        policy.registrationCORSOrigins = ["*", "https://app.example/path", "https://ok.example"]
        policy.signingAlgorithm = .ps256

        let paths = Set(policy.validate().map(\.path))
        let expected: Set<String> = [
            "version", "allowed_scopes[1]", "allowed_scopes[2]", "allowed_scopes[3]", "allowed_grant_types[1]",
            "max_clients_per_user", "client_secret_lifetime", "inactive_client_ttl",
            "client_secret_rotation_window", "client_secret_overlap", "token_lifetimes.access_token",
            "token_lifetimes.refresh_token", "token_lifetimes.dcr_access_token",
            "token_lifetimes.authorization_code", "token_lifetimes.id_token", "consent.remember_for",
            "rate_limits.registration.per_source_per_minute", "rate_limits.login_per_user_per_minute",
            "trusted_software_statement_issuers[0].issuer", "trusted_software_statement_issuers[0].jwks_uri",
            "trusted_software_statement_issuers[1].jwks", "trusted_software_statement_issuers[2].issuer",
            "trusted_software_statement_issuers[2].jwks",
            "upstream_identity_providers[0].id", "upstream_identity_providers[0].display_name",
            "upstream_identity_providers[0].issuer", "upstream_identity_providers[0].client_id",
            "upstream_identity_providers[0].client_secret_ref", "upstream_identity_providers[0].scopes",
            "branding.name", "branding.logo_url", "branding.primary_color",
            "registration_cors_origins[0]", "registration_cors_origins[1]", "signing_algorithm",
        ]
        #expect(
            paths == expected, "missing: \(expected.subtracting(paths)), unexpected: \(paths.subtracting(expected))")
    }

    @Test func signingAlgorithmDefaultsToES256AndAcceptsRS256AndEdDSA() throws {
        #expect(try decode("{}").signingAlgorithm == .es256)
        for name in ["ES256", "RS256", "EdDSA"] {
            let policy = try TenantPolicy.parse(Data(#"{"signing_algorithm":"\#(name)"}"#.utf8))
            #expect(policy.signingAlgorithm.rawValue == name)
            let tree = try LatchkeyJSON.decode(JSONValue.self, from: try LatchkeyJSON.encode(policy))
            #expect(tree["signing_algorithm"]?.stringValue == name)
        }
        // Implemented for verification, but not a tenant signing algorithm.
        guard
            case .invalid(let problems) = try #require(
                throws: TenantPolicyError.self,
                performing: {
                    try TenantPolicy.parse(Data(#"{"signing_algorithm":"PS256"}"#.utf8))
                })
        else {
            Issue.record("PS256 must be refused by validation")
            return
        }
        #expect(problems.map(\.path) == ["signing_algorithm"])
    }

    @Test func negativeLifetimeIsRefusedByParse() throws {
        let json = #"{"token_lifetimes":{"access_token":-1}}"#
        let error = try #require(throws: TenantPolicyError.self) { try TenantPolicy.parse(Data(json.utf8)) }
        #expect(
            error
                == .invalid([PolicyProblem(path: "token_lifetimes.access_token", message: "must be at least 1 second")])
        )
        #expect(error.description == "invalid policy: token_lifetimes.access_token: must be at least 1 second")
        // Services reading a stored policy still decode it; only the admin path refuses it.
        #expect(try decode(json).tokenLifetimes.accessToken == -1)
    }

    @Test func parseRefusesUnknownMembersButDecodingToleratesThem() throws {
        let json = """
            {"max_client_per_user": 3, "pkce": {"allow_plan": true},
             "rate_limits": {"login": {"per_ip": 1}},
             "upstream_identity_providers": [{"id": "g", "issuer": "https://g.example", "client_id": "c",
                                              "client_secret_ref": "env:G", "secret": "oops"}]}
            """
        let error = try #require(throws: TenantPolicyError.self) { try TenantPolicy.parse(Data(json.utf8)) }
        #expect(
            error
                == .unknownMembers([
                    "max_client_per_user", "pkce.allow_plan", "rate_limits.login.per_ip",
                    "upstream_identity_providers[0].secret",
                ]))
        #expect(try decode(json).maxClientsPerUser == 10)
    }

    @Test func aStandaloneRateLimitNeedsBothMembers() throws {
        let limit = try LatchkeyJSON.decode(
            RateLimit.self, from: Data(#"{"per_tenant_per_minute":1,"per_source_per_minute":2}"#.utf8))
        #expect(limit == RateLimit(perTenantPerMinute: 1, perSourcePerMinute: 2))
        #expect(throws: DecodingError.self) {
            try LatchkeyJSON.decode(RateLimit.self, from: Data(#"{"per_tenant_per_minute":1}"#.utf8))
        }
    }

    @Test func parseRefusesNonJSON() {
        #expect(throws: TenantPolicyError.self) { try TenantPolicy.parse(Data("not json".utf8)) }
        #expect(throws: TenantPolicyError.self) { try TenantPolicy.parse(Data("[]".utf8)) }
    }

    @Test func pkceRequirementFollowsClientKind() {
        let defaults = PKCEPolicy()
        #expect(defaults.isRequired(clientType: .public, applicationType: .web))
        #expect(defaults.isRequired(clientType: .confidential, applicationType: .native))
        #expect(!defaults.isRequired(clientType: .confidential, applicationType: .web))
        #expect(PKCEPolicy(requiredFor: .all).isRequired(clientType: .confidential, applicationType: .web))
        #expect(defaults.challengeMethods == ["S256"])
        #expect(PKCEPolicy(allowPlain: true).challengeMethods == ["S256", "plain"])
    }

    @Test func dpopRequirementCombinesTenantAndClient() {
        #expect(!DPoPPolicy().isRequired(clientRequestsBinding: nil))
        #expect(DPoPPolicy().isRequired(clientRequestsBinding: true))
        #expect(DPoPPolicy(required: true).isRequired(clientRequestsBinding: false))
    }

    @Test func scopeDecisionsFollowThePolicy() {
        var policy = TenantPolicy(allowedScopes: ["openid", "profile", "dcr"])
        #expect(policy.decideScopes(requested: "openid  profile openid") == .granted(["openid", "profile"]))
        #expect(policy.decideScopes(requested: "") == .granted([]))
        #expect(policy.decideScopes(requested: "openid admin dcr") == .rejected(disallowed: ["admin", "dcr"]))
        policy.disallowedScopeBehavior = .trim
        let trimmed = policy.decideScopes(requested: "openid payments")
        #expect(trimmed == .trimmed(granted: ["openid"], removed: ["payments"]))
        #expect(trimmed.grantedScope == "openid")
        #expect(ScopeDecision.rejected(disallowed: ["x"]).grantedScope == nil)
    }

    @Test func secretReferencesParse() {
        #expect(SecretReference("env:GOOGLE_SECRET") == .environment("GOOGLE_SECRET"))
        #expect(SecretReference("file:/run/secrets/google") == .file("/run/secrets/google"))
        #expect(SecretReference("env:") == nil)
        #expect(SecretReference("env:BAD-NAME") == nil)
        #expect(SecretReference("file:relative") == nil)
        #expect(SecretReference("s3cr3t") == nil)
    }

    @Test func issuerURLsAllowPlainHTTPOnlyForDevHosts() {
        #expect(PolicyURLRules.isIssuerURL("https://accounts.example.com"))
        #expect(PolicyURLRules.isIssuerURL("http://127.0.0.1:9000"))
        #expect(PolicyURLRules.isIssuerURL("http://mock-oidc:8080/realms/dev"))
        #expect(!PolicyURLRules.isIssuerURL("http://accounts.example.com"))
        #expect(!PolicyURLRules.isIssuerURL("ftp://accounts.example.com"))
    }
}
