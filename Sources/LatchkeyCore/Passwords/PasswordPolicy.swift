import Foundation

/// A tenant's rules for user passwords (or PINs, with `digitsOnly`), applied wherever a password is set:
/// sign-up, an administrator creating a user or resetting a password, and a user changing theirs.
public struct PasswordPolicy: Codable, Sendable, Hashable {
    /// Longest password any policy may allow, in characters (the hash input stays bounded).
    public static let maximumLength = 1024
    /// Entries a tenant's own `blocklist` may hold.
    public static let maximumBlocklistEntries = 1000

    /// Fewest characters.
    public var minLength: Int
    /// Most characters.
    public var maxLength: Int
    /// PIN mode: ASCII digits only.
    public var digitsOnly: Bool
    /// Fewest character kinds (lower case, upper case, digits, others) mixed; ignored in PIN mode.
    public var minCharacterClasses: Int
    /// Refuse runs of consecutive ascending or descending digits or letters (`1234`, `4321`, `abcd`).
    public var forbidSequences: Bool
    /// Longest run of one character allowed (`1111` is a run of 4); 0 = no limit.
    public var maxRepeated: Int
    /// Most occurrences of any one digit anywhere (`1213` has 2 ones); 0 = no limit.
    public var maxSimilarDigits: Int
    /// The tenant's own refused values, compared ignoring case.
    public var blocklist: [String]
    /// Also refuse the shipped list of the most common passwords and PINs.
    public var commonBlocklist: Bool
    /// Refuse the username itself (ignoring case).
    public var differsFromUsername: Bool

    public init(
        minLength: Int = 12, maxLength: Int = PasswordPolicy.maximumLength, digitsOnly: Bool = false,
        minCharacterClasses: Int = 2, forbidSequences: Bool = false, maxRepeated: Int = 0, maxSimilarDigits: Int = 0,
        blocklist: [String] = [], commonBlocklist: Bool = true, differsFromUsername: Bool = true
    ) {
        self.minLength = minLength
        self.maxLength = maxLength
        self.digitsOnly = digitsOnly
        self.minCharacterClasses = minCharacterClasses
        self.forbidSequences = forbidSequences
        self.maxRepeated = maxRepeated
        self.maxSimilarDigits = maxSimilarDigits
        self.blocklist = blocklist
        self.commonBlocklist = commonBlocklist
        self.differsFromUsername = differsFromUsername
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case minLength = "min_length"
        case maxLength = "max_length"
        case digitsOnly = "digits_only"
        case minCharacterClasses = "min_character_classes"
        case forbidSequences = "forbid_sequences"
        case maxRepeated = "max_repeated"
        case maxSimilarDigits = "max_similar_digits"
        case blocklist
        case commonBlocklist = "common_blocklist"
        case differsFromUsername = "differs_from_username"
    }

    public init(from decoder: any Decoder) throws {
        let d = PasswordPolicy()
        let c = try decoder.container(keyedBy: CodingKeys.self)
        minLength = try c.decodeIfPresent(Int.self, forKey: .minLength) ?? d.minLength
        maxLength = try c.decodeIfPresent(Int.self, forKey: .maxLength) ?? d.maxLength
        digitsOnly = try c.decodeIfPresent(Bool.self, forKey: .digitsOnly) ?? d.digitsOnly
        // PIN mode mixes no character kinds, so its default asks for none.
        minCharacterClasses =
            try c.decodeIfPresent(Int.self, forKey: .minCharacterClasses) ?? (digitsOnly ? 1 : d.minCharacterClasses)
        forbidSequences = try c.decodeIfPresent(Bool.self, forKey: .forbidSequences) ?? d.forbidSequences
        maxRepeated = try c.decodeIfPresent(Int.self, forKey: .maxRepeated) ?? d.maxRepeated
        maxSimilarDigits = try c.decodeIfPresent(Int.self, forKey: .maxSimilarDigits) ?? d.maxSimilarDigits
        blocklist = try c.decodeIfPresent([String].self, forKey: .blocklist) ?? d.blocklist
        commonBlocklist = try c.decodeIfPresent(Bool.self, forKey: .commonBlocklist) ?? d.commonBlocklist
        differsFromUsername =
            try c.decodeIfPresent(Bool.self, forKey: .differsFromUsername) ?? d.differsFromUsername
    }

    /// What is wrong with the policy's own values, by member name (empty when usable).
    public func problems() -> [(member: String, message: String)] {
        var found: [(member: String, message: String)] = []
        let bound = Self.maximumLength
        if !(1...bound).contains(minLength) { found.append(("min_length", "must be 1 to \(bound)")) }
        if !(1...bound).contains(maxLength) { found.append(("max_length", "must be 1 to \(bound)")) }
        if minLength > maxLength { found.append(("min_length", "must not be greater than max_length")) }
        if !(0...4).contains(minCharacterClasses) { found.append(("min_character_classes", "must be 0 to 4")) }
        if digitsOnly && minCharacterClasses > 1 {
            found.append(("min_character_classes", "must be at most 1 with digits_only (a PIN has one kind)"))
        }
        if maxRepeated < 0 { found.append(("max_repeated", "must be 0 (no limit) or more")) }
        if maxSimilarDigits < 0 { found.append(("max_similar_digits", "must be 0 (no limit) or more")) }
        if blocklist.count > Self.maximumBlocklistEntries {
            found.append(("blocklist", "must have at most \(Self.maximumBlocklistEntries) entries"))
        }
        for (index, entry) in blocklist.enumerated() where entry.isEmpty || entry.count > 128 {
            found.append(("blocklist[\(index)]", "must be 1 to 128 characters"))
        }
        return found
    }
}
