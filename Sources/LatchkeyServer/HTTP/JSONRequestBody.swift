import Foundation
import LatchkeyCore

/// A JSON request body, read the one way Latchkey reads JSON from outside.
///
/// The bytes go through ``StrictJSONParser`` first: duplicate members, raw control characters in
/// strings, invalid UTF-8, unpaired surrogate escapes, numbers beyond a `Double` and deep nesting are
/// refused there, so no later reading can resolve them differently from another one. U+0000 is refused
/// too (PostgreSQL cannot store it). Typed values are then decoded from the same, now unambiguous,
/// bytes. Callers turn a ``Problem`` into their endpoint's error (`invalid_client_metadata`,
/// `invalid_request`, …).
public struct JSONRequestBody: Sendable {
    /// Why a body was refused; `description` is fit for an `error_description`.
    public enum Problem: Error, Sendable, Equatable, CustomStringConvertible {
        /// No bytes at all.
        case empty
        /// Not strict JSON (see ``StrictJSONParser``).
        case malformed(StrictJSONParser.Failure)
        /// A string or member name holds U+0000.
        case containsNUL
        /// Valid JSON, but not an object.
        case notAnObject
        /// A member has the wrong type or value for the endpoint, e.g. `uses: "ten"`.
        case invalidMember(String)

        public var description: String {
            switch self {
            case .empty: return "a JSON body is required"
            case .malformed(let failure): return "not valid JSON: \(failure.reason) (byte \(failure.offset))"
            case .containsNUL: return "U+0000 characters are not allowed"
            case .notAnObject: return "a JSON object is required"
            case .invalidMember(let message): return message
            }
        }
    }

    /// The body's members.
    public let members: [String: JSONValue]
    /// The body as received (strictly valid JSON).
    public let bytes: [UInt8]

    /// Parses `bytes` as one JSON object.
    public init(_ bytes: [UInt8]) throws(Problem) {
        guard !bytes.isEmpty else { throw .empty }
        let value: JSONValue
        do { value = try StrictJSONParser.parse(bytes) } catch { throw .malformed(error) }
        guard case .object(let members) = value else { throw .notAnObject }
        guard !JSONNULCheck.containsNUL(value) else { throw .containsNUL }
        self.members = members
        self.bytes = bytes
    }

    /// The body as `type`, with Latchkey's date rules; wrong types and values name the member.
    public func decode<T: Decodable>(_ type: T.Type) throws(Problem) -> T {
        do {
            return try LatchkeyJSON.decode(type, from: Data(bytes))
        } catch let error as DecodingError {
            throw .invalidMember(error.readableDescription)
        } catch {
            throw .invalidMember("the request body does not have the expected members")
        }
    }

    /// The string member `name`; nil when absent. Any other type, `null` included, is refused.
    public func string(_ name: String) throws(Problem) -> String? {
        switch members[name] {
        case nil: return nil
        case .string(let value)?: return value
        case _?: throw .invalidMember("\(name): expected a string")
        }
    }

    /// The boolean member `name`; nil when absent. Any other type, `null` included, is refused.
    public func bool(_ name: String) throws(Problem) -> Bool? {
        switch members[name] {
        case nil: return nil
        case .bool(let value)?: return value
        case _?: throw .invalidMember("\(name): expected a boolean")
        }
    }

    /// Refuses members other than `known` (for bodies whose every member has a meaning, so a misspelt one
    /// would otherwise silently fall back to a default).
    public func requireOnly(_ known: Set<String>) throws(Problem) {
        let unknown = members.keys.filter { !known.contains($0) }.sorted()
        guard unknown.isEmpty else {
            throw .invalidMember(
                "unknown members: " + unknown.map(StrictJSONParser.printableName).joined(separator: ", "))
        }
    }
}
