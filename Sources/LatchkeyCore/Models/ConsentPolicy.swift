import Foundation

/// Whether users are asked to approve the scopes a client requests.
///
/// Off by default: a tenant's per-instance clients are its own apps, and the second sign-in of
/// the mobile flow (after the DCR token, to get the instance its tokens) must pass on the SSO session without a prompt.
public struct ConsentPolicy: Codable, Sendable, Hashable {
    public var required: Bool
    /// Seconds a granted consent (user, client, scopes) is remembered; 0 asks every time.
    public var rememberFor: Int

    public init(required: Bool = false, rememberFor: Int = 7_776_000) {
        self.required = required
        self.rememberFor = rememberFor
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case required
        case rememberFor = "remember_for"
    }

    public init(from decoder: any Decoder) throws {
        let defaults = ConsentPolicy()
        let container = try decoder.container(keyedBy: CodingKeys.self)
        required = try container.decodeIfPresent(Bool.self, forKey: .required) ?? defaults.required
        rememberFor = try container.decodeIfPresent(Int.self, forKey: .rememberFor) ?? defaults.rememberFor
    }
}
