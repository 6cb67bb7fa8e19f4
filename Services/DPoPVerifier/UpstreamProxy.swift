import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import Shared

/// Forwards a verified request to the upstream and streams both bodies (never buffered, so any
/// size passes), over AsyncHTTPClient's keep-alive pool.
///
/// Timeouts: connect; idle (longest silence while reading the response); and total, which bounds
/// the wait for the upstream's response head (a streaming body is bounded by the idle timeout).
/// Connection failures answer 502 `upstream_unavailable`, timeouts 504 `upstream_timeout`.
struct UpstreamProxy: Sendable {
    let client: HTTPClient
    let settings: UpstreamSettings
    let forwardCredentials: Bool
    let logger: Logger

    /// The AsyncHTTPClient configuration for an upstream: no redirects followed, no decompression
    /// (the client gets the upstream's bytes), the configured timeouts and pool size.
    static func clientConfiguration(for settings: UpstreamSettings?) -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .milliseconds(Int64(settings?.connectTimeoutMilliseconds ?? 2_000)),
                           read: .milliseconds(Int64(settings?.idleTimeoutMilliseconds ?? 30_000))),
            connectionPool: .init(idleTimeout: .seconds(60),
                                  concurrentHTTP1ConnectionsPerHostSoftLimit: settings?.maxConnections ?? 8),
            ignoreUncleanSSLShutdown: false,
            decompression: .disabled)
        configuration.httpVersion = .automatic
        // No request spans: the hot path pays for them even when nothing collects traces.
        configuration.tracing.tracer = nil
        return configuration
    }

    /// What the client side of the request looked like, for `X-Forwarded-*`.
    struct ClientView: Sendable {
        let origin: String
        let peer: SocketAddress?
        let peerTrusted: Bool
    }

    func forward(_ request: Request, target: RequestTarget, identity: VerifiedIdentity?, client view: ClientView) async throws -> Response {
        var upstreamRequest = HTTPClientRequest(url: settings.origin + settings.basePath + target.raw)
        upstreamRequest.method = HTTPMethod(rawValue: request.method.rawValue)
        upstreamRequest.headers = upstreamHeaders(request.headers, identity: identity, view: view)
        if let length = request.headers[.contentLength].flatMap(Int64.init) {
            if length > 0 { upstreamRequest.body = .stream(request.body, length: .known(length)) }
        } else if request.headers[.transferEncoding] != nil {
            upstreamRequest.body = .stream(request.body, length: .unknown)
        }

        let response: HTTPClientResponse
        do {
            response = try await client.execute(
                upstreamRequest, deadline: .now() + .milliseconds(Int64(settings.timeoutMilliseconds)), logger: logger)
        } catch let error as HTTPClientError
            where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            throw OAuthError(.gatewayTimeout, "upstream_timeout", "the upstream did not answer in time")
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            logger.warning("upstream request failed", metadata: ["error": "\(error)"])
            throw OAuthError(.badGateway, "upstream_unavailable", "the upstream could not be reached")
        }

        var headers = HTTPFields()
        let dropped = Self.connectionListed(response.headers[canonicalForm: "connection"].map(String.init))
        for header in response.headers where !Self.isHopByHop(header.name, dropped: dropped) {
            guard let name = HTTPField.Name(header.name) else { continue }
            headers.append(HTTPField(name: name, value: header.value))
        }
        let status = HTTPResponse.Status(code: Int(response.status.code), reasonPhrase: response.status.reasonPhrase)
        // A small body of known length is read whole: one write instead of a streamed sequence (and
        // a failure while reading it can still be answered with 502/504). Anything else streams.
        if let length = response.headers.first(name: "content-length").flatMap(Int.init), length <= Self.bufferedBodyLimit {
            let body: ByteBuffer
            do {
                body = try await response.body.collect(upTo: length)
            } catch let error as HTTPClientError where error == .readTimeout {
                throw OAuthError(.gatewayTimeout, "upstream_timeout", "the upstream did not answer in time")
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                throw OAuthError(.badGateway, "upstream_unavailable", "the upstream response was cut short")
            }
            return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: body))
        }
        return Response(status: status, headers: headers, body: ResponseBody(asyncSequence: response.body))
    }

    /// Responses up to this size (by `Content-Length`) are buffered rather than streamed.
    static let bufferedBodyLimit = 64 * 1024

    /// The client's headers minus hop-by-hop fields, `X-Latchkey-*`, credentials (unless forwarded
    /// by configuration) and, from an untrusted peer, forwarding headers; plus our forwarding
    /// headers and the identity.
    func upstreamHeaders(_ incoming: HTTPFields, identity: VerifiedIdentity?, view: ClientView) -> HTTPHeaders {
        let dropped = Self.connectionListed(incoming[values: .connection])
        var forwardedFor: [String] = []
        var headers = HTTPHeaders()
        for field in incoming {
            let name = field.name.canonicalName
            if Self.isHopByHop(name, dropped: dropped) || Self.setByProxy.contains(name) || name.hasPrefix(IdentityHeaders.prefix) {
                continue
            }
            if !forwardCredentials, name == "authorization" || name == "dpop" { continue }
            if Self.forwardingHeaders.contains(name) {
                if view.peerTrusted, name == "x-forwarded-for" { forwardedFor.append(field.value) }
                if view.peerTrusted, name == "forwarded" { headers.add(name: field.name.rawName, value: field.value) }
                continue
            }
            headers.add(name: field.name.rawName, value: field.value)
        }
        if let peer = view.peer?.ipAddress { forwardedFor.append(peer) }
        if !forwardedFor.isEmpty { headers.add(name: "X-Forwarded-For", value: forwardedFor.joined(separator: ", ")) }
        if let schemeEnd = view.origin.range(of: "://") {
            headers.add(name: "X-Forwarded-Proto", value: String(view.origin[..<schemeEnd.lowerBound]))
            headers.add(name: "X-Forwarded-Host", value: String(view.origin[schemeEnd.upperBound...]))
        }
        if let identity {
            var fields = HTTPFields()
            IdentityHeaders.add(identity, to: &fields)
            for field in fields { headers.add(name: field.name.rawName, value: field.value) }
        }
        return headers
    }

    /// RFC 9110 §7.6.1 connection-specific fields: never forwarded in either direction.
    static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te", "trailer",
        "transfer-encoding", "upgrade",
    ]

    /// Request fields the sidecar sets itself: `Host` (the upstream's), `Content-Length` (the body
    /// is re-framed) and `Expect` (100-continue is not relayed).
    static let setByProxy: Set<String> = ["host", "content-length", "expect"]

    /// Replaced by the sidecar's own values; kept (and extended) only from trusted proxies.
    static let forwardingHeaders: Set<String> = ["forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto"]

    static func isHopByHop(_ name: String, dropped: Set<String>) -> Bool {
        let lowered = name.lowercased()
        return hopByHop.contains(lowered) || dropped.contains(lowered)
    }

    /// Field names listed in `Connection` (RFC 9110 §7.6.1).
    static func connectionListed(_ values: [String]) -> Set<String> {
        Set(values.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces).lowercased() })
    }
}
