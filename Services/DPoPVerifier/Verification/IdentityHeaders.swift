import HTTPTypes
import LatchkeyCore
import LatchkeyServer
import NIOHTTP1

/// Who made a verified request, as told to the upstream (proxy mode) or the gateway (check mode).
struct VerifiedIdentity: Sendable, Equatable {
    let tenant: TenantSlug
    let clientID: String
    let subject: String
    let scope: String?
    /// The DPoP key thumbprint; nil for an allowed Bearer token.
    let jkt: String?

    init(token: VerifiedAccessToken) {
        tenant = token.tenant
        clientID = token.clientID
        subject = token.subject
        scope = token.scope
        jkt = token.jkt
    }
}

/// The `X-Latchkey-*` headers: only the sidecar may set them.
enum IdentityHeaders {
    static let tenant = HTTPField.Name("X-Latchkey-Tenant")!
    static let clientID = HTTPField.Name("X-Latchkey-Client-Id")!
    static let subject = HTTPField.Name("X-Latchkey-Subject")!
    static let scope = HTTPField.Name("X-Latchkey-Scope")!
    static let jkt = HTTPField.Name("X-Latchkey-Jkt")!
    static let prefix = "x-latchkey-"

    /// Whether a header name is in the identity namespace, whatever its case and whether it is spelled
    /// with `-` or `_`: CGI, WSGI and Rack upstreams read `X_Latchkey_Subject` as `X-Latchkey-Subject`.
    static func isInNamespace(_ name: String) -> Bool {
        var prefixBytes = prefix.utf8.makeIterator()
        for byte in name.utf8 {
            guard let expected = prefixBytes.next() else { return true }
            var folded = byte | (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? 0x20 : 0)
            if folded == UInt8(ascii: "_") { folded = UInt8(ascii: "-") }
            guard folded == expected else { return false }
        }
        return prefixBytes.next() == nil
    }

    /// Removes every field of the identity namespace (not only the five we set), in any spelling.
    static func strip(_ headers: inout HTTPFields) {
        guard headers.contains(where: { isInNamespace($0.name.rawName) }) else { return }
        headers = HTTPFields(headers.filter { !isInNamespace($0.name.rawName) })
    }

    /// Adds the identity; values that could not travel in a header (control characters) are left out.
    static func add(_ identity: VerifiedIdentity, to headers: inout HTTPFields) {
        headers[Self.tenant] = identity.tenant.rawValue
        set(Self.clientID, identity.clientID, in: &headers)
        set(Self.subject, identity.subject, in: &headers)
        if let value = identity.scope { set(Self.scope, value, in: &headers) }
        if let value = identity.jkt { set(Self.jkt, value, in: &headers) }
    }

    private static func set(_ name: HTTPField.Name, _ value: String, in headers: inout HTTPFields) {
        guard canTravel(value) else { return }
        headers[name] = value
    }

    /// The same fields on an upstream request head (proxy mode; the incoming ones were already removed).
    static func add(_ identity: VerifiedIdentity, to headers: inout HTTPHeaders) {
        headers.add(name: Self.tenant.rawName, value: identity.tenant.rawValue)
        if canTravel(identity.clientID) { headers.add(name: Self.clientID.rawName, value: identity.clientID) }
        if canTravel(identity.subject) { headers.add(name: Self.subject.rawName, value: identity.subject) }
        if let value = identity.scope, canTravel(value) { headers.add(name: Self.scope.rawName, value: value) }
        if let value = identity.jkt, canTravel(value) { headers.add(name: Self.jkt.rawName, value: value) }
    }

    private static func canTravel(_ value: String) -> Bool {
        value.utf8.allSatisfy { $0 >= 0x20 && $0 != 0x7F }
    }
}
