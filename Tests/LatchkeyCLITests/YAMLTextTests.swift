import LatchkeyCore
import Testing

@testable import LatchkeyCLI

/// The YAML notation of GitOps documents: what a hand-written file means, and that what the CLI writes reads back
/// as the same data, here and in YAML 1.1 readers.
struct YAMLTextTests {
    @Test func aHandWrittenDocumentMeansWhatItShows() throws {
        let text = """
            # comments are fine
            format: latchkey-tenant/v1
            tenant: {tenant_id: acme, display_name: "Acme"}
            policy:
              self_signup: true
              branding: {name: 'Acme', country: no, launched: 2024-01-02, tagline: ~}
              max_clients: 0x10
              ratio: 1.5e3
              registration_mechanisms:
                - user_token
                - initial_access_token
            templates: []
            clients:
              - client_name: BFF
                scope: >-
                  openid
                  orders:read
            """
        let value = try YAMLText.parse(text)
        #expect(
            value == [
                "format": "latchkey-tenant/v1", "tenant": ["tenant_id": "acme", "display_name": "Acme"],
                "policy": [
                    "self_signup": true,
                    "branding": ["name": "Acme", "country": "no", "launched": "2024-01-02", "tagline": .null],
                    "max_clients": 16, "ratio": 1500,
                    "registration_mechanisms": ["user_token", "initial_access_token"],
                ],
                "templates": [], "clients": [["client_name": "BFF", "scope": "openid orders:read"]],
            ])
    }

    @Test func anchorsAliasesAndMergeKeys() throws {
        let value = try YAMLText.parse(
            """
            base: &base {grant_types: [authorization_code], scope: openid}
            clients:
              - <<: *base
                client_name: A
              - <<: *base
                client_name: B
                scope: openid orders:read
            """)
        #expect(
            value["clients"]
                == [
                    ["grant_types": ["authorization_code"], "scope": "openid", "client_name": "A"],
                    ["grant_types": ["authorization_code"], "scope": "openid orders:read", "client_name": "B"],
                ])
    }

    @Test(arguments: [
        ("a: 1\na: 2\n", "duplicated key"),
        ("1: a\n\"1\": b\n", "appears twice"),
        ("a: 1\n---\nb: 2\n", "one YAML document"),
        ("? [a, b]\n: 1\n", "must be a scalar"),
        ("a: .inf\n", "no JSON equivalent"),
        ("a: 123456789012345678901234567890\n", "too large"),
        ("a: !custom x\n", "not supported"),
        ("a: [1, 2\n", "not valid YAML"),
        ("a: *nowhere\n", "not valid YAML"),
        ("<<: 1\n", "merge key"),
    ])
    func badDocumentsAreRefusedWithTheReason(text: String, reason: String) {
        #expect {
            _ = try YAMLText.parse(text)
        } throws: {
            "\($0)".contains(reason)
        }
    }

    @Test func whatIsWrittenReadsBackAsTheSameValue() throws {
        let tricky: [String] = [
            "", "yes", "no", "on", "off", "y", "true", "False", "null", "~", "123", "0x1F", "1e3", ".inf", "2024-01-02",
            "<<", "=", "- item", "a: b", "#hash", "trailing ", " leading", "multi\nline\n", "quote\"s and 'single'",
            "tab\there", "emoji 🔐 and ünïcödé", "com.example.app:/oauth", "https://example.com/cb?x=1#frag", "@at",
            "`tick", "%percent", "!bang", "&amp", "*star", "[bracket", "{brace", "|pipe", ">fold", "?question",
        ]
        let value: JSONValue = [
            "strings": .array(tricky.map(JSONValue.string)),
            "keys": .object(Dictionary(uniqueKeysWithValues: tricky.map { ($0, JSONValue.string($0)) })),
            "numbers": [0, -1, 1.5, 1e21, 1e-7, 9_007_199_254_740_991],
            "flags": [true, false, .null], "empty": ["list": [], "object": [:]],
            "nested": [["a": [["b": ["c"]]]]],
        ]
        let text = YAMLText.render(value)
        #expect(try YAMLText.parse(text) == value, "\(text)")
        #expect(!text.hasPrefix("{"), "block style, not JSON")
        // Strings a YAML 1.1 reader would turn into booleans, numbers or null are quoted.
        for word in ["yes", "no", "on", "off", "true", "null", "~", "123", "2024-01-02"] {
            #expect(text.contains("- \"\(word)\"\n"), "\(word) is quoted")
        }
    }

    @Test func membersAreSortedLikeTheJSONExport() {
        #expect(YAMLText.render(["b": 1, "a": ["d": true, "c": "x"]]) == "a:\n  c: x\n  d: true\nb: 1\n")
    }

    @Test func theFormatFollowsTheFileName() {
        #expect(DocumentFormat(fileName: "tenant.yaml") == .yaml)
        #expect(DocumentFormat(fileName: "TENANT.YML") == .yaml)
        #expect(DocumentFormat(fileName: "tenant.json") == .json)
        #expect(DocumentFormat(fileName: nil) == .json)
    }
}
