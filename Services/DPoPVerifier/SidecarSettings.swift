import Configuration
import Crypto
import Foundation
import LatchkeyCore
import LatchkeyServer

/// The sidecar's own settings (`DPOP_*` environment variables; listed in docs/configuration.md).
struct SidecarSettings: Sendable {
    /// `proxy`: verify, then forward to the upstream; `check`: answer `/check` for a gateway's auth subrequest.
    enum Mode: String, Sendable {
        case proxy, check
    }

    /// How server nonces (RFC 9449 §9) are used.
    enum NonceMode: Sendable {
        case off
        /// Every proof must carry a nonce from this HMAC secret (shared by all replicas).
        case required(secret: SymmetricKey, stepSeconds: Int64)
    }

    var mode: Mode
    var upstream: UpstreamSettings?
    var origins: ExternalOrigins
    var trustedProxies: TrustedProxies
    var issuers: [String]
    var audiences: Set<String>
    /// Accepted proof algorithms, in the order announced in `algs="…"`.
    var proofAlgorithms: [JWSAlgorithm]
    var iatWindowSeconds: Int64 = 60
    var nonceMode: NonceMode = .off
    var replayCacheMaxEntries: Int = 100_000
    var allowBearer: Bool = false
    var publicPaths: PublicPaths = .none
    /// Forward the client's `Authorization` and `DPoP` headers to the upstream.
    var forwardCredentials: Bool = false
    var tokenClockSkewSeconds: Int64 = 10
    /// Longest access-token lifetime (`exp` − `iat`) accepted; it also bounds how long a revocation is remembered,
    /// so the revocation topics must keep records at least this long (plus the skew and a minute).
    var maxTokenLifetimeSeconds: Int64 = 86_400
    var tokenCacheMaxEntries: Int = 10_000
    var jwksMaxAgeSeconds: Double = 300
    var jwksMinimumRefreshSeconds: Double = 10
    /// Replaces the issuer's origin when fetching discovery and JWKS (e.g. an in-cluster service URL).
    var issuerMetadataOrigin: String?

    static let defaultProofAlgorithms: [JWSAlgorithm] = [.es256, .es384, .ps256, .rs256, .edDSA]

    init(
        mode: Mode = .proxy, upstream: UpstreamSettings?, origins: ExternalOrigins,
        trustedProxies: TrustedProxies = .none,
        issuers: [String], audiences: Set<String>,
        proofAlgorithms: [JWSAlgorithm] = SidecarSettings.defaultProofAlgorithms
    ) {
        self.mode = mode
        self.upstream = upstream
        self.origins = origins
        self.trustedProxies = trustedProxies
        self.issuers = issuers
        self.audiences = audiences
        self.proofAlgorithms = proofAlgorithms
    }

    /// Reads every `DPOP_*` variable; a missing required value or a malformed one is a ConfigurationError naming it.
    init(reader: ConfigReader) throws {
        let env = SettingsReader(reader)
        let mode = try env.parse("dpop.mode", default: Mode.proxy, expected: "proxy or check") {
            Mode(rawValue: $0.lowercased())
        }
        var upstream: UpstreamSettings?
        if mode == .proxy {
            var settings = try UpstreamSettings(url: env.required("dpop.upstream.url"))
            settings.connectTimeoutMilliseconds = try env.int(
                "dpop.upstream.connect.timeout.ms", default: 2_000, range: 1...600_000)
            settings.idleTimeoutMilliseconds = try env.int(
                "dpop.upstream.idle.timeout.ms", default: 30_000, range: 1...3_600_000)
            settings.timeoutMilliseconds = try env.int(
                "dpop.upstream.timeout.ms", default: 30_000, range: 1...3_600_000)
            settings.maxConnections = try env.int("dpop.upstream.max.connections", default: 256, range: 1...65_536)
            upstream = settings
        }
        self.init(
            mode: mode, upstream: upstream,
            origins: try ExternalOrigins(env.requiredList("dpop.external.origins")),
            trustedProxies: try TrustedProxies(env.list("dpop.trusted.proxies")),
            issuers: try env.requiredList("dpop.issuers"),
            audiences: Set(try env.requiredList("dpop.audiences")),
            proofAlgorithms: try env.algorithms("dpop.algs") ?? Self.defaultProofAlgorithms)
        iatWindowSeconds = Int64(try env.int("dpop.iat.window.seconds", default: 60, range: 1...3_600))
        replayCacheMaxEntries = try env.int("dpop.replay.cache.max.entries", default: 100_000, range: 1...100_000_000)
        allowBearer = try env.flag("dpop.allow.bearer", default: false)
        publicPaths = try PublicPaths(env.list("dpop.public.paths"))
        forwardCredentials = try env.flag("dpop.forward.credentials", default: false)
        tokenClockSkewSeconds = Int64(try env.int("dpop.token.clock.skew.seconds", default: 10, range: 0...600))
        maxTokenLifetimeSeconds = Int64(
            try env.int(
                "dpop.max.token.lifetime.seconds", default: 86_400, range: 1...TenantPolicy.maximumDurationSeconds))
        tokenCacheMaxEntries = try env.int("dpop.token.cache.max.entries", default: 10_000, range: 1...10_000_000)
        jwksMaxAgeSeconds = Double(try env.int("dpop.jwks.max.age.seconds", default: 300, range: 1...86_400))
        jwksMinimumRefreshSeconds = Double(try env.int("dpop.jwks.min.refresh.seconds", default: 10, range: 1...86_400))
        issuerMetadataOrigin = try env.text("dpop.issuer.metadata.origin").map {
            try ExternalOrigins.normalizeOrigin($0)
        }
        switch try env.parse(
            "dpop.nonce.mode", default: "off", expected: "off or required",
            {
                ["off", "required"].contains($0) ? $0 : nil
            })
        {
        case "required":
            let secret = try env.requiredSecret("dpop.nonce.secret") {
                try KeyMaterial.symmetricKey(fromConfiguration: $0)
            }
            nonceMode = .required(
                secret: secret,
                stepSeconds: Int64(try env.int("dpop.nonce.step.seconds", default: 300, range: 10...86_400)))
        default:
            nonceMode = .off
        }
        for issuer in issuers where AccessTokenVerifier.tenant(ofIssuer: issuer) == nil {
            throw ConfigurationError("DPOP_ISSUERS: \(issuer) is not of the form https://host/t/{tenant}")
        }
    }
}

/// Where and how requests are forwarded in proxy mode.
struct UpstreamSettings: Sendable {
    /// `scheme://host[:port]` of the upstream.
    let origin: String
    /// A path prefix put before every forwarded path ("" for none, never a trailing slash).
    let basePath: String
    var connectTimeoutMilliseconds = 2_000
    /// Longest silence while reading the upstream's response.
    var idleTimeoutMilliseconds = 30_000
    /// Longest wait for the upstream's response head, from the start of forwarding.
    var timeoutMilliseconds = 30_000
    /// Keep-alive connections to the upstream per event-loop thread (requests beyond wait).
    var maxConnections = 256

    init(url: String) throws {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty,
            components.query == nil, components.fragment == nil, components.user == nil
        else {
            throw ConfigurationError(
                "DPOP_UPSTREAM_URL must be an http(s) URL without query, e.g. http://127.0.0.1:8080")
        }
        let hostPart = host.contains(":") ? "[\(host)]" : host
        origin = "\(scheme)://\(hostPart)" + (components.port.map { ":\($0)" } ?? "")
        var path = components.percentEncodedPath
        while path.hasSuffix("/") { path.removeLast() }
        basePath = path
    }
}

extension SettingsReader {
    /// Proof algorithms by name (comma- or whitespace-separated); nil when unset.
    func algorithms(_ key: String) throws -> [JWSAlgorithm]? {
        guard text(key) != nil else { return nil }
        let algorithms = try list(key).map { name in
            guard let algorithm = JWSAlgorithm(parsing: name) else {
                throw ConfigurationError("\(Self.environmentName(key)): unsupported algorithm \(name)")
            }
            return algorithm
        }
        guard !algorithms.isEmpty else {
            throw ConfigurationError("\(Self.environmentName(key)) must name an algorithm")
        }
        return algorithms
    }
}
