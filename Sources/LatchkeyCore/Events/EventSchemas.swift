import Foundation

/// The JSON Schemas (draft 2020-12) of every event type, shipped as resources of this module.
///
/// Each validates the whole CloudEvent; `data` allows no member it does not list, so a leaked
/// credential member fails validation. Lookup goes through `Bundle.module`, so an executable that
/// calls this must ship the SwiftPM resource bundle next to its binary.
public enum EventSchemas {
    /// Where a schema file could not be found or read.
    public struct MissingSchema: Error, Sendable, CustomStringConvertible {
        public var eventType: LatchkeyEventType
        public var description: String { "no JSON Schema resource \(eventType.schemaFileName)" }
    }

    /// Folder name of the schemas inside the resource bundle (`.copy("Events/Schemas")`).
    public static let resourceFolder = "Schemas"

    /// File URL of the schema for `type`, or `nil` when the resource bundle lacks it.
    public static func url(for type: LatchkeyEventType) -> URL? {
        guard let folder = Bundle.module.resourceURL?.appendingPathComponent(resourceFolder, isDirectory: true) else {
            return nil
        }
        let file = folder.appendingPathComponent(type.schemaFileName, isDirectory: false)
        return FileManager.default.fileExists(atPath: file.path) ? file : nil
    }

    /// The schema document for `type`.
    public static func data(for type: LatchkeyEventType) throws -> Data {
        guard let url = url(for: type) else { throw MissingSchema(eventType: type) }
        return try Data(contentsOf: url)
    }
}
