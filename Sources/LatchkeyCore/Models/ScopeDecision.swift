import Foundation

/// The outcome of checking a requested `scope` against a tenant's allowed scopes.
public enum ScopeDecision: Sendable, Hashable {
    /// Every requested scope is allowed.
    case granted([String])
    /// Policy `trim`: the allowed subset is granted, the rest dropped.
    case trimmed(granted: [String], removed: [String])
    /// Policy `reject`: the registration fails with `invalid_client_metadata`.
    case rejected(disallowed: [String])

    /// The scope string to register, or `nil` when rejected.
    public var grantedScope: String? {
        switch self {
        case .granted(let scopes), .trimmed(let scopes, _): return scopes.joined(separator: " ")
        case .rejected: return nil
        }
    }
}

extension TenantPolicy {
    /// Splits an RFC 6749 scope string into its tokens, dropping repeats but keeping order.
    public static func scopeTokens(_ scope: String) -> [String] {
        var seen: Set<String> = []
        return scope.split(separator: " ", omittingEmptySubsequences: true).map(String.init).filter {
            seen.insert($0).inserted
        }
    }

    /// Whether a token may carry `scope` under this policy: a scope the policy allows, or a reserved one
    /// (`dcr`, `admin`), whose issuance the token service restricts by client and grant instead;
    /// `introspect` is a client capability and never goes into a token.
    public func permitsIssuing(scope: String) -> Bool {
        scope != Self.introspectionScope && (Self.reservedScopes.contains(scope) || allowedScopes.contains(scope))
    }

    /// Applies `allowedScopes` and `disallowedScopeBehavior` to a requested scope string.
    /// Reserved scopes (`dcr`, `admin`) are never granted, whatever the allowed list says.
    public func decideScopes(requested scope: String) -> ScopeDecision {
        let requested = Self.scopeTokens(scope)
        let allowed = Set(allowedScopes).subtracting(Self.reservedScopes)
        let granted = requested.filter { allowed.contains($0) }
        let disallowed = requested.filter { !allowed.contains($0) }
        if disallowed.isEmpty { return .granted(granted) }
        switch disallowedScopeBehavior {
        case .reject: return .rejected(disallowed: disallowed)
        case .trim: return .trimmed(granted: granted, removed: disallowed)
        }
    }
}
