import Foundation

/// A fresh folder under the system's temporary directory, removed with everything in it when the
/// last reference goes away (a suite that holds one as a stored property cleans up after each test).
public final class TemporaryFolder: Sendable {
    public let url: URL

    public init(prefix: String) throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// Writes `contents` to a new file in the folder and returns its path.
    public func file(_ contents: String, named name: String = UUID().uuidString) throws -> String {
        let file = url.appendingPathComponent(name)
        try Data(contents.utf8).write(to: file)
        return file.path
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }
}
