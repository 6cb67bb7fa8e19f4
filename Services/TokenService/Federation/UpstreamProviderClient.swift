import AsyncHTTPClient
import Foundation
import LatchkeyCore
import LatchkeyServer
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// The parts of an upstream provider's discovery document Latchkey uses (OpenID Connect Discovery §3).
struct UpstreamProviderMetadata: Decodable, Sendable {
    let issuer: String
    let authorizationEndpoint: String
    let tokenEndpoint: String
    let jwksURI: String

    enum CodingKeys: String, CodingKey {
        case issuer
        case authorizationEndpoint = "authorization_endpoint"
        case tokenEndpoint = "token_endpoint"
        case jwksURI = "jwks_uri"
    }
}

/// Why a call to an upstream provider failed (logged; the user sees a generic page).
struct UpstreamFailure: Error, CustomStringConvertible {
    let description: String
}

/// HTTP calls to upstream OpenID Connect providers: discovery (cached, `issuer` checked), JWKS
/// (``JWKSCache``: cached, refreshed on an unknown `kid`) and the code exchange. Every call goes through
/// ``GuardedHTTPClient``: the URLs come from tenant policies and discovery documents, so only https to
/// public addresses (unless the operator allows more). No redirects followed.
final class UpstreamProviderClient: Sendable {
    let client: GuardedHTTPClient
    let keys: JWKSCache
    private let discovery: DiscoveryCache

    init(logger: Logger, policy: OutboundPolicy, timeout: Duration) {
        let client = GuardedHTTPClient(policy: policy, timeout: .init(timeout), maximumBytes: 256 * 1024)
        let discovery = DiscoveryCache()
        self.client = client
        self.discovery = discovery
        self.keys = JWKSCache(logger: logger) { issuer in
            let metadata = try await discovery.metadata(issuer) { try await Self.fetchMetadata(issuer, client: client) }
            return try await Self.get(JWKSet.self, from: metadata.jwksURI, client: client)
        }
    }

    /// The provider's discovery document (cached for five minutes).
    func metadata(issuer: String) async throws -> UpstreamProviderMetadata {
        try await discovery.metadata(issuer) { try await Self.fetchMetadata(issuer, client: self.client) }
    }

    /// Exchanges `code` at the token endpoint with PKCE, authenticating as `credential` says; returns the ID token.
    func exchange(
        code: String, verifier: String, redirectURI: String, clientID: String, credential: UpstreamClientCredential,
        metadata: UpstreamProviderMetadata
    ) async throws -> String {
        var request = HTTPClientRequest(url: metadata.tokenEndpoint)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.headers.add(name: "Accept", value: "application/json")
        var form = [
            ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirectURI),
            ("code_verifier", verifier),
        ]
        switch credential {
        case .basic(let secret):
            // RFC 6749 §2.3.1: id and secret are form-encoded before the Basic encoding.
            let credentials =
                "\(AuthorizationResponseTarget.encode(clientID)):\(AuthorizationResponseTarget.encode(secret))"
            request.headers.add(name: "Authorization", value: "Basic " + Data(credentials.utf8).base64EncodedString())
        case .post(let secret):
            form += [("client_id", clientID), ("client_secret", secret)]
        case .assertion(let assertion):
            form += [
                ("client_id", clientID),
                ("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"),
                ("client_assertion", assertion),
            ]
        }
        request.body = .bytes(
            ByteBuffer(
                string: form.map { "\($0.0)=\(AuthorizationResponseTarget.encode($0.1))" }.joined(separator: "&")))
        let response = try await client.execute(request)
        let body = response.body
        guard response.status == .ok else {
            throw UpstreamFailure(description: "token endpoint answered \(response.status.code)")
        }
        struct TokenResponse: Decodable {
            let idToken: String?
            enum CodingKeys: String, CodingKey { case idToken = "id_token" }
        }
        guard
            let idToken = (try? StrictJSONParser.decode(TokenResponse.self, from: Array(body.readableBytesView)))?
                .idToken
        else {
            throw UpstreamFailure(description: "token response has no id_token")
        }
        return idToken
    }

    private static func fetchMetadata(_ issuer: String, client: GuardedHTTPClient) async throws
        -> UpstreamProviderMetadata
    {
        var trimmed = issuer
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        let metadata = try await get(
            UpstreamProviderMetadata.self, from: trimmed + "/.well-known/openid-configuration", client: client)
        // OpenID Connect Discovery §4.3: the document must name the issuer it was fetched for.
        guard metadata.issuer == issuer else {
            throw UpstreamFailure(description: "discovery document names another issuer")
        }
        for url in [metadata.authorizationEndpoint, metadata.tokenEndpoint, metadata.jwksURI] {
            do throws(OutboundPolicy.Refusal) { _ = try client.policy.target(url) } catch {
                throw UpstreamFailure(description: "discovery document endpoint \(url): \(error.description)")
            }
        }
        return metadata
    }

    private static func get<T: Decodable>(_ type: T.Type, from url: String, client: GuardedHTTPClient) async throws -> T
    {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "application/json")
        let response = try await client.execute(request)
        let body = response.body
        guard response.status == .ok else {
            throw UpstreamFailure(description: "\(url) answered \(response.status.code)")
        }
        do { return try StrictJSONParser.decode(T.self, from: Array(body.readableBytesView)) } catch {
            throw UpstreamFailure(description: "\(url) is not a valid \(T.self) document")
        }
    }
}

/// Discovery documents per issuer, shared fetches, five-minute life.
private actor DiscoveryCache {
    private var entries: [String: (metadata: UpstreamProviderMetadata, fetchedAt: Date)] = [:]
    private var inFlight: [String: Task<UpstreamProviderMetadata, any Error>] = [:]
    private let maxAge: TimeInterval = 300

    func metadata(
        _ issuer: String, fetch: @escaping @Sendable () async throws -> UpstreamProviderMetadata
    ) async throws -> UpstreamProviderMetadata {
        if let entry = entries[issuer], Date().timeIntervalSince(entry.fetchedAt) < maxAge { return entry.metadata }
        let task = inFlight[issuer] ?? Task { try await fetch() }
        inFlight[issuer] = task
        defer { inFlight[issuer] = nil }
        let metadata = try await task.value
        entries[issuer] = (metadata, Date())
        return metadata
    }
}
