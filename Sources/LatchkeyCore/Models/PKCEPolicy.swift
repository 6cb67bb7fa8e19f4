import Foundation

/// Which clients must use PKCE (RFC 7636) and whether `plain` is tolerated.
public struct PKCEPolicy: Codable, Sendable, Hashable {
    /// The set of clients for which a code challenge is mandatory.
    public enum Requirement: String, ProtocolStringEnum {
        /// Public clients and every native application (RFC 8252 §8.1), the default.
        case publicAndNative = "public_and_native"
        /// Every client, confidential web clients included.
        case all

        public static var valueDescription: String { "PKCE requirement" }
    }

    public var requiredFor: Requirement
    /// `plain` gives no protection against an intercepted challenge, so it is off unless asked for.
    public var allowPlain: Bool

    public init(requiredFor: Requirement = .publicAndNative, allowPlain: Bool = false) {
        self.requiredFor = requiredFor
        self.allowPlain = allowPlain
    }

    /// Whether a client of this kind must send a code challenge.
    public func isRequired(clientType: ClientType, applicationType: ApplicationType) -> Bool {
        switch requiredFor {
        case .all: return true
        case .publicAndNative: return clientType == .public || applicationType == .native
        }
    }

    /// `code_challenge_method` values accepted at the authorization endpoint.
    public var challengeMethods: [String] { allowPlain ? ["S256", "plain"] : ["S256"] }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case requiredFor = "required_for"
        case allowPlain = "allow_plain"
    }

    public init(from decoder: any Decoder) throws {
        let defaults = PKCEPolicy()
        let container = try decoder.container(keyedBy: CodingKeys.self)
        requiredFor = try container.decodeIfPresent(Requirement.self, forKey: .requiredFor) ?? defaults.requiredFor
        allowPlain = try container.decodeIfPresent(Bool.self, forKey: .allowPlain) ?? defaults.allowPlain
    }
}
