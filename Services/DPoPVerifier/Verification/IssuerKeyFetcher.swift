import AsyncHTTPClient
import Foundation
import LatchkeyCore
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// Fetches an issuer's JWKS the way RFC 8414 describes: the discovery document at
/// `{origin}/.well-known/oauth-authorization-server{issuer path}`, whose `issuer` must equal the
/// configured one (§3.3), then its `jwks_uri`.
struct IssuerKeyFetcher: Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private struct Metadata: Decodable {
        let issuer: String
        let jwksURI: String

        enum CodingKeys: String, CodingKey {
            case issuer
            case jwksURI = "jwks_uri"
        }
    }

    /// The issuer client: no redirects followed, no request spans.
    static var clientConfiguration: HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow, decompression: .disabled)
        configuration.tracing.tracer = nil
        return configuration
    }

    let client: HTTPClient
    /// When set, discovery and JWKS are fetched from this origin instead of the URLs' own
    /// (in-cluster service address); paths are kept.
    let metadataOrigin: String?
    var timeout: TimeAmount = .seconds(5)
    /// Largest accepted discovery or JWKS document.
    var maximumBytes = 512 * 1024

    func fetchKeys(issuer: String) async throws -> JWKSet {
        guard let (origin, path) = Self.split(issuer) else {
            throw Failure(description: "issuer is not an http(s) URL")
        }
        let metadata = try await get(
            Metadata.self, from: (metadataOrigin ?? origin) + "/.well-known/oauth-authorization-server" + path)
        guard metadata.issuer == issuer else { throw Failure(description: "discovery document names another issuer") }
        guard let (jwksOrigin, jwksPath) = Self.split(metadata.jwksURI) else {
            throw Failure(description: "jwks_uri is not an http(s) URL")
        }
        return try await get(JWKSet.self, from: (metadataOrigin ?? jwksOrigin) + jwksPath)
    }

    private func get<T: Decodable>(_ type: T.Type, from url: String) async throws -> T {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "application/json")
        let response = try await client.execute(request, timeout: timeout)
        guard response.status == .ok else { throw Failure(description: "\(url) answered \(response.status.code)") }
        let body = try await response.body.collect(upTo: maximumBytes)
        do {
            return try StrictJSONParser.decode(T.self, from: Array(body.readableBytesView))
        } catch {
            throw Failure(description: "\(url) is not a valid \(T.self) document")
        }
    }

    /// `scheme://authority` and the path (without a trailing slash) of an http(s) URL.
    static func split(_ url: String) -> (origin: String, path: String)? {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.percentEncodedHost, !host.isEmpty,
            components.query == nil, components.fragment == nil
        else { return nil }
        var path = components.percentEncodedPath
        while path.hasSuffix("/") { path.removeLast() }
        return ("\(scheme)://\(host)" + (components.port.map { ":\($0)" } ?? ""), path)
    }
}
