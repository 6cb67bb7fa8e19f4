import AsyncHTTPClient
import Foundation
import LatchkeyCore
import LatchkeyServer
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// Fetches a JWK Set document by URL (a software-statement issuer's `jwks_uri`): GET without redirects,
/// bounded in time and size, through ``GuardedHTTPClient`` (https to public addresses only, unless the
/// operator allows more), since the URL comes from a tenant policy.
struct JWKSDocumentFetcher: Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let client: GuardedHTTPClient

    init(policy: OutboundPolicy) {
        client = GuardedHTTPClient(policy: policy, timeout: .seconds(5), maximumBytes: 64 * 1024)
    }

    func fetch(_ url: String) async throws -> JWKSet {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "application/jwk-set+json, application/json")
        let response = try await client.execute(request)
        guard response.status == .ok else { throw Failure(description: "\(url) answered \(response.status.code)") }
        do { return try StrictJSONParser.decode(JWKSet.self, from: Array(response.body.readableBytesView)) } catch {
            throw Failure(description: "\(url) is not a JWK Set document")
        }
    }
}
