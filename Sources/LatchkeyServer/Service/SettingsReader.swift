import Configuration
import Foundation
import LatchkeyCore

/// The one way settings are read: typed lookups over swift-configuration whose errors name the
/// environment variable (`http.port` → `HTTP_PORT`). Values are trimmed; an empty value counts as unset.
public struct SettingsReader: Sendable {
    public let reader: ConfigReader

    public init(_ reader: ConfigReader) {
        self.reader = reader
    }

    /// The environment variable `EnvironmentVariablesProvider` reads for `key`.
    public static func environmentName(_ key: String) -> String {
        key.uppercased().replacingOccurrences(of: ".", with: "_")
    }

    // MARK: Text

    // The methods' names are not those of other readers in the code (`string`, `bool` of request bodies
    // and queries): the configuration document test finds settings by the names of these helpers.

    /// The value, or nil when unset or empty. Secrets are read with ``secretText(_:)``, which also reads files.
    public func text(_ key: String) -> String? {
        guard let value = reader.string(forKey: ConfigKey(key))?.trimmingCharacters(in: .whitespaces),
            !value.isEmpty
        else { return nil }
        return value
    }

    /// A secret's value, never logged: from the variable itself, or from the file its `_FILE` variable names
    /// (`DATABASE_URL_FILE=/var/run/secrets/db/url`, a Kubernetes Secret mounted as a file; one trailing
    /// newline is dropped); nil when neither is set. Both set, or an unreadable or empty file, is an error.
    public func secretText(_ key: String) throws -> String? {
        let name = Self.environmentName(key)
        let inline = reader.string(forKey: ConfigKey(key), isSecret: true)?.trimmingCharacters(in: .whitespaces)
        guard let path = text(key + ".file") else { return inline?.isEmpty == false ? inline : nil }
        guard inline?.isEmpty != false else {
            throw ConfigurationError("\(name) and \(name)_FILE are both set: set one of them")
        }
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw ConfigurationError(
                "\(name)_FILE names a file that cannot be read (\(path)): \((error as NSError).localizedDescription)")
        }
        var value = String(decoding: data, as: UTF8.self)
        // "\r\n" is one Character in Swift, so one removal drops either ending.
        if value.hasSuffix("\n") || value.hasSuffix("\r\n") { value.removeLast() }
        guard !value.isEmpty else { throw ConfigurationError("\(name)_FILE names an empty file (\(path))") }
        return value
    }

    public func text(_ key: String, default fallback: String) -> String {
        text(key) ?? fallback
    }

    /// The value; unset is an error, completed by `example` (what a value looks like) when given.
    public func required(_ key: String, secret: Bool = false, example: String? = nil) throws -> String {
        guard let value = secret ? try secretText(key) : text(key) else {
            throw ConfigurationError("\(Self.environmentName(key)) is required" + (example.map { " (\($0))" } ?? ""))
        }
        return value
    }

    /// `transform` of the value, `fallback` when unset; a value `transform` refuses (nil) is an error,
    /// completed by `expected` (what a value must be) when given.
    public func parse<T>(
        _ key: String, default fallback: T, expected: String? = nil, _ transform: (String) -> T?
    ) throws -> T {
        guard let raw = text(key) else { return fallback }
        guard let value = transform(raw) else {
            throw ConfigurationError(
                "\(Self.environmentName(key)) " + (expected.map { "must be \($0)" } ?? "has an invalid value: \(raw)"))
        }
        return value
    }

    /// Comma- or whitespace-separated values; empty when unset.
    public func list(_ key: String) -> [String] {
        Self.split(text(key) ?? "")
    }

    /// ``list(_:)`` of a secret (``secretText(_:)``: the variable or its `_FILE`).
    public func secretList(_ key: String) throws -> [String] {
        Self.split(try secretText(key) ?? "")
    }

    private static func split(_ value: String) -> [String] {
        value.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" })
            .map(String.init)
    }

    /// ``list(_:)``; no value is an error.
    public func requiredList(_ key: String) throws -> [String] {
        let values = list(key)
        guard !values.isEmpty else { throw ConfigurationError("\(Self.environmentName(key)) is required") }
        return values
    }

    // MARK: Numbers and durations

    /// An integer within `range` (`1...600`, or `0...` for no upper bound).
    public func int(_ key: String, default fallback: Int, range: some RangeExpression<Int>) throws -> Int {
        let bounds: String
        switch range {
        case let closed as ClosedRange<Int>: bounds = "from \(closed.lowerBound) to \(closed.upperBound)"
        case let from as PartialRangeFrom<Int>: bounds = "of at least \(from.lowerBound)"
        default: bounds = "in \(range)"
        }
        let value = try parse(key, default: fallback, expected: "an integer \(bounds)") { Int($0) }
        guard range.contains(value) else {
            throw ConfigurationError("\(Self.environmentName(key)) must be an integer \(bounds)")
        }
        return value
    }

    /// A whole number of seconds within `range`, as a duration.
    public func seconds(_ key: String, default fallback: Int, range: some RangeExpression<Int>) throws -> Duration {
        .seconds(try int(key, default: fallback, range: range))
    }

    /// A whole number of milliseconds within `range`, as a duration.
    public func milliseconds(_ key: String, default fallback: Int, range: some RangeExpression<Int>) throws -> Duration
    {
        .milliseconds(try int(key, default: fallback, range: range))
    }

    public func flag(_ key: String, default fallback: Bool) throws -> Bool {
        try parse(key, default: fallback, expected: "true or false") { raw in
            switch raw.lowercased() {
            case "1", "true", "yes", "on": return true
            case "0", "false", "no", "off": return false
            default: return nil
            }
        }
    }

    // MARK: Domain values

    /// An absolute http(s) base URL (``baseURL(_:name:)``); nil when unset.
    public func baseURL(_ key: String) throws -> String? {
        try text(key).map { try Self.baseURL($0, name: Self.environmentName(key)) }
    }

    /// The rule for every configured base URL (public URLs of the services): absolute http(s) with a host,
    /// no query or fragment; surrounding whitespace and trailing slashes are dropped, so paths append cleanly.
    public static func baseURL(_ value: String, name: String) throws -> String {
        var trimmed = value.trimmingCharacters(in: .whitespaces)
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard let components = URLComponents(string: trimmed),
            let scheme = components.scheme?.lowercased(), scheme == "https" || scheme == "http",
            components.host?.isEmpty == false, components.query == nil, components.fragment == nil
        else { throw ConfigurationError("\(name) must be an absolute http(s) URL without query or fragment") }
        return trimmed
    }

    /// A tenant slug; nil when unset.
    public func tenant(_ key: String) throws -> TenantSlug? {
        guard let raw = text(key) else { return nil }
        guard let slug = TenantSlug(rawValue: raw) else {
            throw ConfigurationError("\(Self.environmentName(key)) must be a tenant slug ([a-z0-9][a-z0-9-]{0,62})")
        }
        return slug
    }

    /// A secret read without logging its value and decoded by `decode`; nil when unset. A value `decode`
    /// refuses is an error naming the variable, what a value must be (`expected`, when given) and what
    /// `decode` found wrong.
    public func secret<T>(_ key: String, expected: String? = nil, _ decode: (String) throws -> T) throws -> T? {
        guard let raw = try secretText(key) else { return nil }
        return try decodeSecret(raw, key: key, expected: expected, decode)
    }

    /// ``secret(_:expected:_:)``, required; `example` completes the error when it is unset.
    public func requiredSecret<T>(
        _ key: String, expected: String? = nil, example: String? = nil, _ decode: (String) throws -> T
    ) throws -> T {
        try decodeSecret(required(key, secret: true, example: example), key: key, expected: expected, decode)
    }

    private func decodeSecret<T>(_ raw: String, key: String, expected: String?, _ decode: (String) throws -> T) throws
        -> T
    {
        do { return try decode(raw) } catch {
            throw ConfigurationError(
                "\(Self.environmentName(key))" + (expected.map { " must be \($0)" } ?? "") + ": \(error)")
        }
    }
}
