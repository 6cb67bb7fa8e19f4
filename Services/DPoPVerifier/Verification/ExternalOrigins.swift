import Foundation
import LatchkeyCore

/// The origins clients use to reach the API (`scheme://host[:port]`), from which `htu` is computed.
///
/// The request's `Host` (or, from a trusted proxy, `X-Forwarded-Host`/`-Proto` or `Forwarded`) only
/// *selects* one of these; a value that names none of them falls back to the first, so a client can
/// never make the sidecar accept a proof for a URL it was not configured to serve.
struct ExternalOrigins: Sendable {
    /// Normalised origins (lower-case scheme and host, default port dropped), first = primary.
    let origins: [String]
    /// `host[:port]` of each origin, as a `Host` header would carry it after normalisation.
    private let authorities: [String]

    init(_ values: [String]) throws {
        guard !values.isEmpty else { throw ConfigurationError("DPOP_EXTERNAL_ORIGINS needs at least one origin") }
        origins = try values.map(Self.normalizeOrigin)
        authorities = origins.map { String($0[$0.range(of: "://")!.upperBound...]) }
    }

    var primary: String { origins[0] }

    /// `scheme://host[:port]` normalised like an `htu` (RFC 9449 §4.3), or a ConfigurationError.
    static func normalizeOrigin(_ value: String) throws -> String {
        let invalid = ConfigurationError("\(value) is not an origin of the form https://host[:port]")
        guard !value.contains("?"), !value.contains("#") else { throw invalid }
        let withSlash = value.hasSuffix("/") ? value : value + "/"
        guard let normalized = try? HTUNormalizer.normalize(withSlash),
            let schemeEnd = normalized.range(of: "://"),
            normalized[schemeEnd.upperBound...].firstIndex(of: "/") == normalized.index(before: normalized.endIndex)
        else {
            throw invalid
        }
        return String(normalized.dropLast())
    }

    /// The origin a request addressed: matched on scheme and authority when a trusted proxy told
    /// us both, else on the authority alone; the primary origin when nothing matches.
    func select(host: String?, scheme: String?) -> String {
        guard origins.count > 1, let host else { return primary }
        let authority = Self.normalizeAuthority(host, scheme: scheme)
        for (index, candidate) in authorities.enumerated() where candidate == authority {
            if let scheme, !origins[index].hasPrefix(scheme.lowercased() + "://") { continue }
            return origins[index]
        }
        return primary
    }

    /// Lower-cased `host[:port]` with the scheme's default port (or both, without a scheme) dropped.
    private static func normalizeAuthority(_ host: String, scheme: String?) -> String {
        let lowered = host.lowercased()
        let defaults: [String]
        switch scheme?.lowercased() {
        case "https": defaults = [":443"]
        case "http": defaults = [":80"]
        default: defaults = [":443", ":80"]
        }
        for suffix in defaults where lowered.hasSuffix(suffix) {
            return String(lowered.dropLast(suffix.count))
        }
        return lowered
    }
}
