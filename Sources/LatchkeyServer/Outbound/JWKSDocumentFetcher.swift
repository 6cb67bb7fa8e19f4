import AsyncHTTPClient
import Foundation
import LatchkeyCore
import NIOCore
import NIOHTTP1

/// Fetches a JWK Set document by URL (a software-statement issuer's or a client's `jwks_uri`): GET without
/// redirects, bounded in time and size, through ``GuardedHTTPClient`` (https to public addresses only, unless
/// the operator allows more), since the URL comes from a tenant policy or a client's metadata.
public struct JWKSDocumentFetcher: Sendable {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public let client: GuardedHTTPClient

    public init(policy: OutboundPolicy) {
        client = GuardedHTTPClient(policy: policy, timeout: .seconds(5), maximumBytes: 64 * 1024)
    }

    public func fetch(_ url: String) async throws -> JWKSet {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "application/jwk-set+json, application/json")
        let response = try await client.execute(request)
        guard response.status == .ok else { throw Failure(description: "\(url) answered \(response.status.code)") }
        do { return try StrictJSONParser.decode(JWKSet.self, from: Array(response.body.readableBytesView)) } catch {
            throw Failure(description: "\(url) is not a JWK Set document")
        }
    }
}
