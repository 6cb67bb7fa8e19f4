/// One rule of a ``PasswordPolicy`` a password breaks; the raw value is the code APIs return in
/// `violations`, `message` the sentence pages show.
public enum PasswordViolation: String, Sendable, Hashable, CaseIterable, Codable {
    case tooShort = "too_short"
    case tooLong = "too_long"
    case notDigits = "not_digits"
    case tooFewCharacterClasses = "too_few_character_classes"
    case sequence
    case repeated
    case similarDigits = "similar_digits"
    case blocklisted
    case sameAsUsername = "same_as_username"

    /// A readable explanation under `policy`.
    public func message(_ policy: PasswordPolicy) -> String {
        let noun = policy.digitsOnly ? "PIN" : "password"
        switch self {
        case .tooShort: return "The \(noun) must have at least \(policy.minLength) characters."
        case .tooLong: return "The \(noun) must have at most \(policy.maxLength) characters."
        case .notDigits: return "The PIN must consist of digits only."
        case .tooFewCharacterClasses:
            return "The password must mix at least \(policy.minCharacterClasses) kinds of characters "
                + "(lower case, upper case, digits, symbols)."
        case .sequence: return "The \(noun) must not contain a sequence such as 1234, 4321 or abcd."
        case .repeated:
            return "The \(noun) must not repeat one character more than \(policy.maxRepeated) times in a row."
        case .similarDigits:
            return "The \(noun) must not use any one digit more than \(policy.maxSimilarDigits) times."
        case .blocklisted: return "This \(noun) is too common or not allowed. Choose another one."
        case .sameAsUsername: return "The \(noun) must not be your username."
        }
    }
}

/// A password refused by the tenant's policy, with every rule it breaks.
public struct PasswordPolicyError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Always `invalid_password`.
    public static let errorCode = "invalid_password"

    public let violations: [PasswordViolation]
    public let policy: PasswordPolicy

    public init(violations: [PasswordViolation], policy: PasswordPolicy) {
        self.violations = violations
        self.policy = policy
    }

    /// Every message, for an `error_description` or a page.
    public var description: String { violations.map { $0.message(policy) }.joined(separator: " ") }
}
