import AsyncHTTPClient
import Foundation
import LatchkeyCore
import NIOCore
import NIOHTTP1

/// Outgoing HTTP to URLs that come from tenants and clients, under an ``OutboundPolicy``: the URL is
/// checked, its host resolved and every address checked, and the connection made to the checked address
/// (the certificate is still verified against the host name). No redirects; bounded time and size.
public struct GuardedHTTPClient: Sendable {
    public struct Response: Sendable {
        public let status: HTTPResponseStatus
        public let body: ByteBuffer
    }

    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let description: String
    }

    public let policy: OutboundPolicy
    public var timeout: TimeAmount
    /// Largest accepted response body.
    public var maximumBytes: Int

    public init(policy: OutboundPolicy, timeout: TimeAmount = .seconds(5), maximumBytes: Int = 256 * 1024) {
        self.policy = policy
        self.timeout = timeout
        self.maximumBytes = maximumBytes
    }

    public func execute(_ request: HTTPClientRequest) async throws -> Response {
        let target: OutboundPolicy.Target
        let address: String
        do throws(OutboundPolicy.Refusal) {
            target = try policy.target(request.url)
            address = try await policy.resolve(target)
        } catch {
            throw Failure(description: "refused to fetch \(request.url): \(error.description)")
        }
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow, timeout: .init(connect: timeout, read: timeout))
        // One client per request, pinned to the checked address: the name cannot resolve differently for
        // the connection than it did for the check.
        if IPNetwork.parseAddress(target.host) == nil { configuration.dnsOverride = [target.host: address] }
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            let response = try await client.execute(request, timeout: timeout)
            let body: ByteBuffer
            do { body = try await response.body.collect(upTo: maximumBytes) } catch {
                throw Failure(description: "\(request.url) sent more than \(maximumBytes) bytes")
            }
            try await client.shutdown()
            return Response(status: response.status, body: body)
        } catch {
            try? await client.shutdown()
            throw error
        }
    }
}
