import Foundation

extension PasswordPolicy {
    /// Runs of this many consecutive ascending or descending characters count as a sequence.
    public static let sequenceLength = 4

    /// Every rule `password` breaks, in a stable order; empty when it is acceptable.
    public func violations(of password: String, username: String? = nil) -> [PasswordViolation] {
        var found: [PasswordViolation] = []
        let characters = Array(password)
        if characters.count < minLength { found.append(.tooShort) }
        // A byte bound too: one character may be many scalars (combining marks), and the hash input stays small.
        if characters.count > maxLength || password.utf8.count > 4 * Self.maximumLength { found.append(.tooLong) }
        if digitsOnly {
            if !password.utf8.allSatisfy({ (0x30...0x39).contains($0) }) { found.append(.notDigits) }
        } else if Self.characterClasses(of: characters) < minCharacterClasses {
            found.append(.tooFewCharacterClasses)
        }
        if forbidSequences && Self.containsSequence(characters) { found.append(.sequence) }
        if maxRepeated > 0 && Self.longestRun(characters) > maxRepeated { found.append(.repeated) }
        if maxSimilarDigits > 0 && Self.mostFrequentDigitCount(characters) > maxSimilarDigits {
            found.append(.similarDigits)
        }
        let folded = password.lowercased()
        if blocklist.contains(where: { $0.lowercased() == folded })
            || (commonBlocklist && CommonPasswords.contains(folded))
        {
            found.append(.blocklisted)
        }
        if differsFromUsername, let username, !username.isEmpty, folded == username.lowercased() {
            found.append(.sameAsUsername)
        }
        return found
    }

    /// Throws ``PasswordPolicyError`` unless `password` follows the policy.
    public func check(_ password: String, username: String? = nil) throws(PasswordPolicyError) {
        let found = violations(of: password, username: username)
        guard found.isEmpty else { throw PasswordPolicyError(violations: found, policy: self) }
    }

    static func characterClasses(of characters: [Character]) -> Int {
        var classes = Set<Int>()
        for character in characters {
            if character.isLowercase {
                classes.insert(0)
            } else if character.isUppercase {
                classes.insert(1)
            } else if character.isNumber {
                classes.insert(2)
            } else {
                classes.insert(3)
            }
        }
        return classes.count
    }

    /// Whether `sequenceLength` characters in a row step by +1 or −1 (digits and ASCII letters, ignoring case).
    static func containsSequence(_ characters: [Character]) -> Bool {
        let codes: [Int?] = characters.map { character in
            guard let ascii = character.asciiValue else { return nil }
            switch ascii {
            case 0x30...0x39: return Int(ascii)
            case 0x41...0x5A: return Int(ascii) + 0x20
            case 0x61...0x7A: return Int(ascii)
            default: return nil
            }
        }
        guard codes.count >= sequenceLength else { return false }
        var ascending = 1
        var descending = 1
        for index in codes.indices.dropFirst() {
            guard let current = codes[index], let previous = codes[index - 1],
                Self.sameKind(current, previous)
            else {
                ascending = 1
                descending = 1
                continue
            }
            ascending = current == previous + 1 ? ascending + 1 : 1
            descending = current == previous - 1 ? descending + 1 : 1
            if ascending >= sequenceLength || descending >= sequenceLength { return true }
        }
        return false
    }

    private static func sameKind(_ a: Int, _ b: Int) -> Bool {
        let isDigit = { (code: Int) in (0x30...0x39).contains(code) }
        return isDigit(a) == isDigit(b)
    }

    static func longestRun(_ characters: [Character]) -> Int {
        var longest = 0
        var current = 0
        var previous: Character?
        for character in characters {
            current = character == previous ? current + 1 : 1
            previous = character
            longest = max(longest, current)
        }
        return longest
    }

    static func mostFrequentDigitCount(_ characters: [Character]) -> Int {
        var counts: [Character: Int] = [:]
        for character in characters where character.asciiValue.map({ (0x30...0x39).contains($0) }) == true {
            counts[character, default: 0] += 1
        }
        return counts.values.max() ?? 0
    }
}
