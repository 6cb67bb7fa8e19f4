import Foundation

/// Tenant-wide DPoP (RFC 9449) rules; a client can still opt in with `dpop_bound_access_tokens`.
public struct DPoPPolicy: Codable, Sendable, Hashable {
    /// Every token request of the tenant must carry a DPoP proof.
    public var required: Bool
    /// Proofs must carry a server-issued nonce (RFC 9449 §8); costs a round trip per new client.
    public var nonceRequired: Bool

    public init(required: Bool = false, nonceRequired: Bool = false) {
        self.required = required
        self.nonceRequired = nonceRequired
    }

    /// Whether tokens for a client must be DPoP-bound, given its own metadata flag.
    public func isRequired(clientRequestsBinding: Bool?) -> Bool {
        required || clientRequestsBinding == true
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case required
        case nonceRequired = "nonce_required"
    }

    public init(from decoder: any Decoder) throws {
        let defaults = DPoPPolicy()
        let container = try decoder.container(keyedBy: CodingKeys.self)
        required = try container.decodeIfPresent(Bool.self, forKey: .required) ?? defaults.required
        nonceRequired = try container.decodeIfPresent(Bool.self, forKey: .nonceRequired) ?? defaults.nonceRequired
    }
}
