import Foundation

/// The shipped list of the most common passwords and PINs (`common-passwords.txt`, lower case).
public enum CommonPasswords {
    /// Every entry; empty if the resource is missing from the build (then nothing is refused by this list).
    public static let entries: Set<String> = {
        guard let url = Bundle.module.url(forResource: "common-passwords", withExtension: "txt"),
            let text = try? String(contentsOf: url, encoding: .utf8)
        else { return [] }
        return Set(
            text.split(whereSeparator: \.isNewline).map(String.init).filter { !$0.isEmpty && !$0.hasPrefix("#") })
    }()

    /// Whether `folded` (already lower-cased) is on the list.
    public static func contains(_ folded: String) -> Bool { entries.contains(folded) }
}
