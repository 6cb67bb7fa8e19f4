import Configuration
import Foundation
import LatchkeyCore

extension OutboundPolicy {
    /// Reads `OUTBOUND_ALLOW_LOOPBACK_HTTP` (default false; development only) and `OUTBOUND_ALLOWED_NETWORKS`.
    public init(reader: ConfigReader) throws {
        let env = SettingsReader(reader)
        try self.init(
            allowLoopbackHTTP: env.flag("outbound.allow.loopback.http", default: false),
            allowedNetworks: env.text("outbound.allowed.networks"))
    }
}

/// The `env:`/`file:` references an operator allows as upstream client secrets
/// (`UPSTREAM_SECRET_REFERENCES`, comma-separated; an entry ending in `*` allows that prefix, e.g.
/// `file:/run/secrets/idp/*`). Tenant admins cannot add to it: they give secrets as values, which are
/// stored sealed. Empty by default, so no reference resolves.
public struct SecretReferenceAllowList: Sendable, Equatable {
    public let entries: [String]

    public init(_ entries: [String] = []) {
        self.entries = entries
    }

    public init(reader: ConfigReader) throws {
        let entries = SettingsReader(reader).list("upstream.secret.references")
        for entry in entries {
            let reference = entry.hasSuffix("*") ? String(entry.dropLast()) : entry
            guard reference.hasPrefix("env:") || reference.hasPrefix("file:/") else {
                throw ConfigurationError("UPSTREAM_SECRET_REFERENCES: \(entry) must start with env: or file:/")
            }
        }
        self.init(entries)
    }

    /// Whether `reference` is one the operator allows; file paths with `..` never are.
    public func allows(_ reference: String) -> Bool {
        guard SecretReference(reference) != nil, !reference.contains("/..") else { return false }
        return entries.contains { entry in
            entry.hasSuffix("*") ? reference.hasPrefix(entry.dropLast()) : reference == entry
        }
    }
}
