import ArgumentParser
import Foundation
import LatchkeyCore

/// The two notations of GitOps documents: JSON and YAML, for the same data.
enum DocumentFormat: String, ExpressibleByArgument, CaseIterable, Sendable {
    case json
    case yaml

    /// YAML for a file named `*.yaml` or `*.yml`, JSON otherwise (standard output included).
    init(fileName: String?) {
        let lowered = fileName?.lowercased() ?? ""
        self = lowered.hasSuffix(".yaml") || lowered.hasSuffix(".yml") ? .yaml : .json
    }

    func render(_ value: JSONValue) -> String {
        switch self {
        case .json: return PrettyJSON.string(value)
        case .yaml:
            // The writers add the final line break themselves.
            var text = YAMLText.render(value)
            while text.hasSuffix("\n") { text.removeLast() }
            return text
        }
    }

    /// The document at `path` (`-` for standard input): JSON, parsed strictly, when it starts with `{`, else YAML.
    static func read(_ path: String) throws -> JSONValue {
        let data = try JSONFile.contents(path)
        let first = data.first {
            ![UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r")].contains($0)
        }
        if first == UInt8(ascii: "{") { return try JSONFile.parse(data, path: path) }
        do { return try YAMLText.parse(String(decoding: data, as: UTF8.self)) } catch {
            throw ValidationErrorText("\(path): \(error)")
        }
    }
}
