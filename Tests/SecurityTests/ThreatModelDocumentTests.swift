import Foundation
import Testing

/// `docs/security.md` names the tests that pin each mitigation; every name must be a real test.
@Suite struct ThreatModelDocumentTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// `Target/Suite.test` references, written in backticks.
    static func references(in text: String) throws -> [(target: String, suite: String, test: String)] {
        let pattern = try NSRegularExpression(pattern: "`([A-Za-z]+Tests)/([A-Za-z0-9_]+)\\.([A-Za-z0-9_]+)`")
        return pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { match in
            func group(_ index: Int) -> String { String(text[Range(match.range(at: index), in: text)!]) }
            return (group(1), group(2), group(3))
        }
    }

    /// The Swift sources of one test target, concatenated.
    static func sources(of target: String) -> String {
        let folder = repository.appendingPathComponent("Tests/\(target)")
        guard let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) else { return "" }
        return files.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
            .compactMap { try? String(contentsOf: $0, encoding: .utf8) }.joined(separator: "\n")
    }

    @Test func everyTestNamedInTheThreatModelExists() throws {
        let text = try String(contentsOf: Self.repository.appendingPathComponent("docs/security.md"), encoding: .utf8)
        let references = try Self.references(in: text)
        #expect(references.count >= 20, "the threat model names only \(references.count) tests")
        var cache: [String: String] = [:]
        for reference in references {
            let source = cache[reference.target] ?? Self.sources(of: reference.target)
            cache[reference.target] = source
            let suite =
                source.range(of: "(struct|class|final class) \(reference.suite)\\b", options: .regularExpression) != nil
            let test = source.range(of: "func \(reference.test)\\(", options: .regularExpression) != nil
            #expect(
                suite && test,
                "docs/security.md names \(reference.target)/\(reference.suite).\(reference.test), which does not exist")
        }
    }

    @Test func everySecurityTestIsNamedInTheThreatModel() throws {
        let text = try String(contentsOf: Self.repository.appendingPathComponent("docs/security.md"), encoding: .utf8)
        let named = Set(try Self.references(in: text).filter { $0.target == "SecurityTests" }.map(\.test))
        let source = Self.sources(of: "SecurityTests")
        let pattern = try NSRegularExpression(pattern: "@Test func ([A-Za-z0-9_]+)\\(")
        let tests = pattern.matches(in: source, range: NSRange(source.startIndex..., in: source))
            .map { String(source[Range($0.range(at: 1), in: source)!]) }
            .filter {
                !["everyTestNamedInTheThreatModelExists", "everySecurityTestIsNamedInTheThreatModel"].contains($0)
            }
        for test in tests {
            #expect(named.contains(test), "SecurityTests.\(test) pins a mitigation that docs/security.md does not name")
        }
    }
}
