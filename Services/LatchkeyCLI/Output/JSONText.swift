import Foundation
import LatchkeyCore

/// Reading JSON files and showing JSON values in tables.
enum JSONText {
    /// A value as a table cell: strings bare, lists comma-separated, anything else as compact JSON.
    static func plain(_ value: JSONValue) -> String {
        switch value {
        case .string(let text): return text
        case .array(let elements): return elements.map(plain).joined(separator: ",")
        default: return String(decoding: CanonicalJSON.encode(value), as: UTF8.self)
        }
    }
}

enum JSONFile {
    /// The JSON document at `path` (`-` for standard input), parsed strictly.
    static func read(_ path: String) throws -> JSONValue {
        try parse(try contents(path), path: path)
    }

    /// The bytes at `path`, or of standard input for `-`.
    static func contents(_ path: String) throws -> Data {
        if path == "-" { return FileHandle.standardInput.readDataToEndOfFile() }
        guard let contents = FileManager.default.contents(atPath: path) else {
            throw ValidationErrorText("cannot read \(path)")
        }
        return contents
    }

    static func parse(_ data: Data, path: String) throws -> JSONValue {
        do { return try StrictJSONParser.parse(Array(data)) } catch {
            throw ValidationErrorText("\(path): \(error)")
        }
    }

    /// Writes `text` to `path`, readable by the owner only when it holds secrets.
    static func write(_ text: String, to path: String, secret: Bool) throws {
        guard
            FileManager.default.createFile(
                atPath: path, contents: Data((text + "\n").utf8),
                attributes: secret ? [.posixPermissions: 0o600] : nil)
        else { throw ValidationErrorText("cannot write \(path)") }
        if secret { try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path) }
    }
}

/// A plain error message for the user (ArgumentParser prints it as `Error: …` and exits 1).
struct ValidationErrorText: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
