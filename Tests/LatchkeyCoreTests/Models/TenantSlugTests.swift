import Foundation
import Testing

@testable import LatchkeyCore

@Suite struct TenantSlugTests {
    @Test(arguments: [
        "a", "0", "acme", "acme-corp", "a-", "a--b", "9lives", "x1-2-3", String(repeating: "a", count: 63),
        "a" + String(repeating: "-", count: 62),
    ])
    func acceptsValidSlugs(candidate: String) throws {
        let slug = try #require(TenantSlug(rawValue: candidate))
        #expect(slug.rawValue == candidate)
        #expect(slug.description == candidate)
        #expect(TenantSlug(candidate) == slug)
    }

    @Test(arguments: [
        "", "-acme", "-", "Acme", "ACME", "acMe", "acme_corp", "acme.corp", "acme corp", " acme", "acme ",
        "a/b", "é", "acmé", "acme\n", String(repeating: "a", count: 64), "0" + String(repeating: "-", count: 63),
    ])
    func refusesInvalidSlugs(candidate: String) {
        #expect(TenantSlug(rawValue: candidate) == nil)
        #expect(!TenantSlug.isValid(candidate))
    }

    @Test func codesAsAPlainString() throws {
        let slug = try #require(TenantSlug(rawValue: "acme-corp"))
        #expect(String(decoding: try LatchkeyJSON.encode(slug), as: UTF8.self) == #""acme-corp""#)
        #expect(try LatchkeyJSON.decode(TenantSlug.self, from: Data(#""acme-corp""#.utf8)) == slug)
        #expect(try LatchkeyJSON.decode([TenantSlug: Int].self, from: Data(#"["acme",1]"#.utf8)).count == 1)
    }

    @Test func decodingAnInvalidSlugExplainsTheRule() throws {
        let error = try #require(throws: DecodingError.self) {
            try LatchkeyJSON.decode(TenantSlug.self, from: Data(#""Acme""#.utf8))
        }
        #expect(error.readableDescription.contains("\"Acme\" is not a tenant slug"))
    }

    @Test func sortsAndHashesByValue() throws {
        let slugs = ["globex", "acme", "initech"].compactMap(TenantSlug.init(rawValue:))
        #expect(slugs.sorted().map(\.rawValue) == ["acme", "globex", "initech"])
        #expect(Set(slugs + slugs).count == 3)
    }
}
