import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1

/// How a verified request is rewritten for the upstream and the upstream's answer for the client:
/// the request head (target under the base path, `Host`, body framing, forwarding and identity
/// headers, credentials per configuration) and the response head (hop-by-hop fields removed).
/// The bytes are moved by ``ProxyChannelHandler`` over an ``UpstreamPool``.
struct UpstreamProxy: Sendable {
    let settings: UpstreamSettings
    let forwardCredentials: Bool
    /// `host[:port]` of the upstream, its `Host` header.
    let hostHeader: String

    init(settings: UpstreamSettings, forwardCredentials: Bool) {
        self.settings = settings
        self.forwardCredentials = forwardCredentials
        hostHeader = String(settings.origin.split(separator: "://", maxSplits: 1).last ?? "")
    }

    /// What the client side of the request looked like, for `X-Forwarded-*`.
    struct ClientView {
        let origin: String
        /// The peer's IP address (`X-Forwarded-For`), nil for a Unix socket.
        let peerAddress: String?
        let peerTrusted: Bool
    }

    /// How the client framed its request body; the upstream request gets the same framing.
    enum BodyFraming: Equatable {
        case none
        case length(Int)
        case chunked

        init(_ headers: some RequestHeaderFields) {
            if let length = headers.combined(.contentLength).flatMap(Int.init) {
                self = length > 0 ? .length(length) : .none
            } else if headers.combined(.transferEncoding) != nil {
                self = .chunked
            } else {
                self = .none
            }
        }
    }

    /// The request head sent upstream.
    func requestHead(
        _ request: HTTPRequestHead, target: RequestTarget, identity: VerifiedIdentity?, view: ClientView,
        framing: BodyFraming
    ) -> HTTPRequestHead {
        var headers = upstreamHeaders(request.headers, identity: identity, view: view)
        headers.add(name: "Host", value: hostHeader)
        switch framing {
        case .none: break
        case .length(let length): headers.add(name: "Content-Length", value: String(length))
        case .chunked: headers.add(name: "Transfer-Encoding", value: "chunked")
        }
        return HTTPRequestHead(
            version: .http1_1, method: request.method, uri: settings.basePath + target.raw, headers: headers)
    }

    /// The response head sent to the client: the upstream's status and end-to-end headers.
    static func responseHead(_ upstream: HTTPResponseHead) -> HTTPResponseHead {
        let dropped = connectionListed(upstream.headers["connection"])
        var headers = HTTPHeaders()
        headers.reserveCapacity(upstream.headers.count + 3)
        for header in upstream.headers where !isHopByHop(header.name, dropped: dropped) {
            headers.add(name: header.name, value: header.value)
        }
        return HTTPResponseHead(version: .http1_1, status: upstream.status, headers: headers)
    }

    /// The client's headers minus hop-by-hop fields, `X-Latchkey-*`, credentials (unless forwarded
    /// by configuration) and, from an untrusted peer, forwarding headers; plus our forwarding
    /// headers and the identity.
    func upstreamHeaders(_ incoming: HTTPHeaders, identity: VerifiedIdentity?, view: ClientView) -> HTTPHeaders {
        let dropped = Self.connectionListed(incoming["connection"])
        var forwardedFor: [String] = []
        var headers = HTTPHeaders()
        headers.reserveCapacity(incoming.count + 10)
        for field in incoming {
            let name = Self.lowercased(field.name)
            if Self.hopByHop.contains(name) || dropped.contains(name) || Self.setByProxy.contains(name)
                || IdentityHeaders.isInNamespace(name)
            {
                continue
            }
            if !forwardCredentials, name == "authorization" || name == "dpop" { continue }
            if Self.forwardingHeaders.contains(name) {
                if view.peerTrusted, name == "x-forwarded-for" { forwardedFor.append(field.value) }
                if view.peerTrusted, name == "forwarded" { headers.add(name: field.name, value: field.value) }
                continue
            }
            headers.add(name: field.name, value: field.value)
        }
        if let peer = view.peerAddress { forwardedFor.append(peer) }
        if !forwardedFor.isEmpty {
            headers.add(
                name: "X-Forwarded-For",
                value: forwardedFor.count == 1 ? forwardedFor[0] : forwardedFor.joined(separator: ", "))
        }
        let (scheme, authority) = Self.split(origin: view.origin)
        headers.add(name: "X-Forwarded-Proto", value: scheme)
        headers.add(name: "X-Forwarded-Host", value: authority)
        if let identity { IdentityHeaders.add(identity, to: &headers) }
        return headers
    }

    /// ASCII lower case, copying only when there is an upper-case letter.
    static func lowercased(_ name: String) -> String {
        name.utf8.contains { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") } ? name.lowercased() : name
    }

    /// `scheme` and `host[:port]` of a configured origin (`scheme://host[:port]`, see ``ExternalOrigins``).
    static func split(origin: String) -> (scheme: String, authority: String) {
        let bytes = origin.utf8
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return ("", origin) }
        let authorityStart = bytes.index(colon, offsetBy: 3, limitedBy: bytes.endIndex) ?? bytes.endIndex
        return (String(origin[..<colon]), String(origin[authorityStart...]))
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
    static let forwardingHeaders: Set<String> = [
        "forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto",
    ]

    /// For names as received (any case).
    static func isHopByHop(_ name: String, dropped: Set<String>) -> Bool {
        let lowered = lowercased(name)
        return hopByHop.contains(lowered) || dropped.contains(lowered)
    }

    /// Field names listed in `Connection` (RFC 9110 §7.6.1).
    static func connectionListed(_ values: [String]) -> Set<String> {
        Set(values.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces).lowercased() })
    }
}
