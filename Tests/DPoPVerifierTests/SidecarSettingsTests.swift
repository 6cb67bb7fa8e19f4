import Configuration
import LatchkeyCore
import Testing

@testable import DPoPVerifier

/// `DPOP_*` environment variables, read exactly as the service reads them.
@Suite struct SidecarSettingsTests {
    static let minimal = [
        "DPOP_UPSTREAM_URL": "http://127.0.0.1:8080",
        "DPOP_EXTERNAL_ORIGINS": "https://api.example.com",
        "DPOP_ISSUERS": "https://auth.example.com/t/acme",
        "DPOP_AUDIENCES": "https://api.example.com",
    ]

    func read(_ environment: [String: String]) throws -> SidecarSettings {
        try SidecarSettings(
            reader: ConfigReader(provider: EnvironmentVariablesProvider(environmentVariables: environment)))
    }

    func expectError(_ environment: [String: String], mentioning text: String) {
        do {
            _ = try read(environment)
            Issue.record("accepted, expected an error mentioning \(text)")
        } catch {
            #expect("\(error)".contains(text), "\(error)")
        }
    }

    @Test func minimalConfigurationGetsSafeDefaults() throws {
        let settings = try read(Self.minimal)
        #expect(settings.mode == .proxy)
        #expect(settings.upstream?.origin == "http://127.0.0.1:8080")
        #expect(settings.upstream?.basePath == "")
        #expect(settings.origins.origins == ["https://api.example.com"])
        #expect(settings.trustedProxies.blocks.isEmpty)
        #expect(settings.proofAlgorithms == [.es256, .es384, .ps256, .rs256, .edDSA])
        #expect(settings.iatWindowSeconds == 60)
        #expect(!settings.allowBearer)
        #expect(!settings.forwardCredentials)
        #expect(settings.publicPaths.isEmpty)
        #expect(settings.replayCacheMaxEntries == 100_000)
        #expect(settings.maxTokenLifetimeSeconds == 86_400)
        guard case .off = settings.nonceMode else {
            Issue.record("nonces on by default")
            return
        }
    }

    @Test func everyVariableIsRead() throws {
        let secret = KeyMaterial.generateConfigurationValue()
        let settings = try read(
            Self.minimal.merging([
                "DPOP_UPSTREAM_URL": "http://api.internal:9000/base/",
                "DPOP_EXTERNAL_ORIGINS": "https://API.example.com:443, https://api.example.org:8443",
                "DPOP_TRUSTED_PROXIES": "10.0.0.0/8 ::1",
                "DPOP_ISSUERS": "https://auth.example.com/t/acme,https://auth.example.com/t/beta",
                "DPOP_AUDIENCES": "https://api.example.com,orders",
                "DPOP_ALGS": "ES256,EdDSA",
                "DPOP_IAT_WINDOW_SECONDS": "30",
                "DPOP_NONCE_MODE": "required", "DPOP_NONCE_SECRET": secret, "DPOP_NONCE_STEP_SECONDS": "120",
                "DPOP_REPLAY_CACHE_MAX_ENTRIES": "5000", "DPOP_ALLOW_BEARER": "true",
                "DPOP_PUBLIC_PATHS": "/health,/public/*",
                "DPOP_FORWARD_CREDENTIALS": "yes", "DPOP_TOKEN_CLOCK_SKEW_SECONDS": "5",
                "DPOP_TOKEN_CACHE_MAX_ENTRIES": "77",
                "DPOP_JWKS_MAX_AGE_SECONDS": "600", "DPOP_JWKS_MIN_REFRESH_SECONDS": "20",
                "DPOP_ISSUER_METADATA_ORIGIN": "http://token-service:8082",
                "DPOP_UPSTREAM_CONNECT_TIMEOUT_MS": "100", "DPOP_UPSTREAM_IDLE_TIMEOUT_MS": "200",
                "DPOP_UPSTREAM_TIMEOUT_MS": "300",
                "DPOP_UPSTREAM_MAX_CONNECTIONS": "16", "DPOP_MAX_TOKEN_LIFETIME_SECONDS": "3600",
            ]) { $1 })
        #expect(settings.upstream?.origin == "http://api.internal:9000")
        #expect(settings.upstream?.basePath == "/base")
        #expect(settings.upstream?.connectTimeoutMilliseconds == 100)
        #expect(settings.upstream?.idleTimeoutMilliseconds == 200)
        #expect(settings.upstream?.timeoutMilliseconds == 300)
        #expect(settings.upstream?.maxConnections == 16)
        #expect(settings.origins.origins == ["https://api.example.com", "https://api.example.org:8443"])
        #expect(settings.trustedProxies.blocks.count == 2)
        #expect(settings.issuers.count == 2)
        #expect(settings.audiences == ["https://api.example.com", "orders"])
        #expect(settings.proofAlgorithms == [.es256, .edDSA])
        #expect(settings.iatWindowSeconds == 30)
        guard case .required(_, let step) = settings.nonceMode else {
            Issue.record("nonce mode")
            return
        }
        #expect(step == 120)
        #expect(settings.replayCacheMaxEntries == 5000)
        #expect(settings.allowBearer && settings.forwardCredentials)
        #expect(settings.publicPaths.contains("/public/a.png"))
        #expect(settings.tokenClockSkewSeconds == 5)
        #expect(settings.tokenCacheMaxEntries == 77)
        #expect(settings.jwksMaxAgeSeconds == 600 && settings.jwksMinimumRefreshSeconds == 20)
        #expect(settings.issuerMetadataOrigin == "http://token-service:8082")
        #expect(settings.maxTokenLifetimeSeconds == 3_600)
    }

    @Test func checkModeNeedsNoUpstream() throws {
        var environment = Self.minimal
        environment["DPOP_UPSTREAM_URL"] = nil
        environment["DPOP_MODE"] = "check"
        #expect(try read(environment).upstream == nil)
        environment["DPOP_MODE"] = "proxy"
        expectError(environment, mentioning: "DPOP_UPSTREAM_URL is required")
    }

    @Test func malformedValuesNameTheirVariable() {
        let cases: [(String, String, String)] = [
            ("DPOP_MODE", "sidecar", "DPOP_MODE"),
            ("DPOP_UPSTREAM_URL", "ftp://x", "DPOP_UPSTREAM_URL"),
            ("DPOP_EXTERNAL_ORIGINS", "https://api.example.com/v1", "not an origin"),
            ("DPOP_EXTERNAL_ORIGINS", "https://api.example.com?x", "not an origin"),
            ("DPOP_TRUSTED_PROXIES", "10.0.0.0/33", "DPOP_TRUSTED_PROXIES"),
            ("DPOP_TRUSTED_PROXIES", "proxy.local", "DPOP_TRUSTED_PROXIES"),
            ("DPOP_ISSUERS", "https://auth.example.com/acme", "DPOP_ISSUERS"),
            ("DPOP_ALGS", "HS256", "unsupported algorithm HS256"),
            ("DPOP_ALGS", "none", "unsupported algorithm none"),
            ("DPOP_IAT_WINDOW_SECONDS", "0", "DPOP_IAT_WINDOW_SECONDS"),
            ("DPOP_IAT_WINDOW_SECONDS", "ten", "DPOP_IAT_WINDOW_SECONDS"),
            ("DPOP_ALLOW_BEARER", "maybe", "DPOP_ALLOW_BEARER"),
            ("DPOP_PUBLIC_PATHS", "health", "DPOP_PUBLIC_PATHS"),
            ("DPOP_PUBLIC_PATHS", "/a/../b", "DPOP_PUBLIC_PATHS"),
            ("DPOP_NONCE_MODE", "sometimes", "DPOP_NONCE_MODE"),
            ("DPOP_MAX_TOKEN_LIFETIME_SECONDS", "0", "DPOP_MAX_TOKEN_LIFETIME_SECONDS"),
        ]
        for (name, value, text) in cases {
            expectError(Self.minimal.merging([name: value]) { $1 }, mentioning: text)
        }
        for name in ["DPOP_EXTERNAL_ORIGINS", "DPOP_ISSUERS", "DPOP_AUDIENCES"] {
            var environment = Self.minimal
            environment[name] = nil
            expectError(environment, mentioning: "\(name) is required")
        }
        expectError(
            Self.minimal.merging(["DPOP_NONCE_MODE": "required"]) { $1 }, mentioning: "DPOP_NONCE_SECRET is required")
        expectError(
            Self.minimal.merging(["DPOP_NONCE_MODE": "required", "DPOP_NONCE_SECRET": "c2hvcnQ"]) { $1 },
            mentioning: "at least 32 bytes")
    }
}
