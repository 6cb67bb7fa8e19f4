import Foundation
import LatchkeyCore

/// One stored signing key as operators see it (admin API, CLI): never any private material.
public struct SigningKeyRecord: Sendable, Equatable {
    public var kid: String
    /// The stored algorithm name (ES256, RS256, EdDSA, …).
    public var algorithm: String
    public var status: SigningKeyStatus
    public var createdAt: Date
    public var activatedAt: Date?
    public var retiredAt: Date?
    /// For a retired key: when it leaves the JWKS (every token it signed has expired by then).
    public var publishUntil: Date?
    /// Who staged it (an admin actor, `cli:…`, or `policy` when a policy change asked for it); nil for first keys.
    public var stagedBy: String?

    /// The operator-facing lifecycle name: `staged`, `active`, `retiring` (still published) or `retired`.
    public func lifecycleName(at now: Date = Date()) -> String {
        switch status {
        case .next: return "staged"
        case .active: return "active"
        case .retired: return (publishUntil.map { $0 > now } ?? false) ? "retiring" : "retired"
        }
    }
}

/// Why a rotation step was refused.
public enum SigningKeyRotationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A staged key is waiting for activation; a second one would make two keys race to sign.
    case alreadyStaged(kid: String)
    /// The algorithm is not one a tenant may sign with.
    case unsupportedAlgorithm(String)
    case unknownTenant

    public var description: String {
        switch self {
        case .alreadyStaged(let kid): return "key \(kid) is already staged and waits for activation"
        case .unsupportedAlgorithm(let name):
            return "\(name) is not a token signing algorithm; expected one of "
                + TenantPolicy.signingAlgorithms.map(\.rawValue).joined(separator: ", ")
        case .unknownTenant: return "unknown tenant"
        }
    }
}
