import Foundation
import LatchkeyCore
import Testing

@Suite struct PasswordPolicyTests {
    static let pin = PasswordPolicy(
        minLength: 4, maxLength: 6, digitsOnly: true, minCharacterClasses: 1, forbidSequences: true, maxRepeated: 3,
        maxSimilarDigits: 2, blocklist: ["2580"], commonBlocklist: false)
    static let password = PasswordPolicy(
        minLength: 10, maxLength: 20, minCharacterClasses: 3, forbidSequences: true, maxRepeated: 2,
        blocklist: ["Acme-Winter-24"])

    /// One row per violation code (and clean values that must pass).
    static let cases: [(PasswordPolicy, String, String?, [PasswordViolation])] = [
        (pin, "8362", nil, []),
        (pin, "836", nil, [.tooShort]),
        (pin, "8362957", nil, [.tooLong]),
        (pin, "83a2", nil, [.notDigits]),
        (pin, "1234", nil, [.sequence]),
        (pin, "4321", nil, [.sequence]),
        (pin, "901234", nil, [.sequence]),
        (pin, "1111", nil, [.repeated, .similarDigits]),
        (pin, "7111", nil, [.similarDigits]),
        (pin, "1213", nil, []),
        (pin, "12131", nil, [.similarDigits]),
        (pin, "2580", nil, [.blocklisted]),
        (pin, "9072", "9072", [.sameAsUsername]),
        (password, "Kx7#mPq2vL", nil, []),
        (password, "Kx7#mPq2v", nil, [.tooShort]),
        (password, "Kx7#mPq2vLKx7#mPq2vL!", nil, [.tooLong]),
        (password, "kx7mpq2vlz", nil, [.tooFewCharacterClasses]),
        (password, "Kx7#abcdZq", nil, [.sequence]),
        (password, "Kx7#DCBAzq", nil, [.sequence]),
        (password, "Kx7#mmmq2v", nil, [.repeated]),
        (password, "ACME-winter-24", nil, [.blocklisted]),
        (password, "Kx7#mPq2vL", "kx7#mpq2vl", [.sameAsUsername]),
        (PasswordPolicy(), "QwertyUIOP123", nil, [.blocklisted]),
        (PasswordPolicy(minLength: 4, digitsOnly: true, minCharacterClasses: 1), "1234", nil, [.blocklisted]),
        (
            PasswordPolicy(minLength: 4, digitsOnly: true, minCharacterClasses: 1, commonBlocklist: false), "1234", nil,
            []
        ),
    ]

    @Test(arguments: 0..<cases.count) func eachRuleHasItsCode(_ index: Int) {
        let (policy, value, username, expected) = Self.cases[index]
        #expect(policy.violations(of: value, username: username) == expected, "\(value)")
    }

    @Test func everyCodeIsCoveredAndReadable() {
        let covered = Set(Self.cases.flatMap(\.3))
        #expect(covered == Set(PasswordViolation.allCases))
        for violation in PasswordViolation.allCases {
            #expect(!violation.message(Self.pin).isEmpty)
            #expect(!violation.message(Self.pin).contains("_"))
        }
        #expect(PasswordViolation.similarDigits.rawValue == "similar_digits")
    }

    @Test func theShippedListIsLoaded() {
        #expect(CommonPasswords.entries.count >= 400)
        #expect(
            CommonPasswords.contains("123456") && CommonPasswords.contains("qwerty") && CommonPasswords.contains("0000")
        )
        #expect(CommonPasswords.entries.allSatisfy { $0 == $0.lowercased() })
    }

    @Test func checkThrowsEveryViolation() {
        #expect(throws: PasswordPolicyError(violations: [.repeated, .similarDigits], policy: Self.pin)) {
            try Self.pin.check("1111")
        }
    }

    @Test func thePolicyIsPartOfTheTenantPolicyAndValidated() throws {
        let parsed = try TenantPolicy.parse(
            Data(#"{"password_policy":{"min_length":4,"max_length":6,"digits_only":true,"max_similar_digits":2}}"#.utf8)
        )
        #expect(parsed.passwordPolicy.digitsOnly)
        #expect(parsed.passwordPolicy.minCharacterClasses == 1)
        #expect(TenantPolicy.default.passwordPolicy == PasswordPolicy())

        let invalid: [(String, String)] = [
            (#"{"min_length":8,"max_length":6}"#, "password_policy.min_length"),
            (#"{"min_length":0}"#, "password_policy.min_length"),
            (#"{"max_length":5000}"#, "password_policy.max_length"),
            (#"{"max_repeated":-1}"#, "password_policy.max_repeated"),
            (#"{"max_similar_digits":-2}"#, "password_policy.max_similar_digits"),
            (#"{"digits_only":true,"min_character_classes":3}"#, "password_policy.min_character_classes"),
            (#"{"min_character_classes":5}"#, "password_policy.min_character_classes"),
            (#"{"blocklist":[""]}"#, "password_policy.blocklist[0]"),
        ]
        for (member, path) in invalid {
            #expect(throws: TenantPolicyError.self) {
                try TenantPolicy.parse(Data(#"{"password_policy":\#(member)}"#.utf8))
            }
            let policy = try LatchkeyJSON.decode(TenantPolicy.self, from: Data(#"{"password_policy":\#(member)}"#.utf8))
            #expect(policy.validate().map(\.path).contains(path), "\(member)")
        }
        #expect(throws: TenantPolicyError.unknownMembers(["password_policy.min_lenght"])) {
            try TenantPolicy.parse(Data(#"{"password_policy":{"min_lenght":4}}"#.utf8))
        }
    }
}
