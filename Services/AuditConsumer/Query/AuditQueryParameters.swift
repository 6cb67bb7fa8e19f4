import Foundation
import Hummingbird
import LatchkeyCore
import LatchkeyServer

/// The query string of an audit request, read strictly: each parameter at most once, bounded in
/// length, unknown ones refused (a typo like `clientid=` must not silently return everything).
struct AuditQueryParameters {
    static let maximumValueLength = 255

    private var values: [String: String] = [:]

    init(_ request: Request, allowed: Set<String>) throws(OAuthError) {
        for (name, value) in request.uri.queryParameters {
            let name = String(name)
            guard allowed.contains(name) else {
                let known = allowed.sorted().joined(separator: ", ")
                throw .invalidRequest("unknown query parameter \(name.prefix(40)); expected one of \(known)")
            }
            guard values[name] == nil else { throw .invalidRequest("query parameter \(name) is repeated") }
            let text = String(value)
            guard text.utf8.count <= (name == "cursor" ? AuditCursor.maximumLength : Self.maximumValueLength) else {
                throw .invalidRequest("query parameter \(name) is too long")
            }
            values[name] = text
        }
    }

    /// A non-empty string value, if given.
    func string(_ name: String) throws(OAuthError) -> String? {
        guard let value = values[name] else { return nil }
        guard !value.isEmpty else { throw .invalidRequest("query parameter \(name) is empty") }
        guard !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .invalidRequest("query parameter \(name) contains control characters")
        }
        return value
    }

    /// An RFC 3339 date-time, if given.
    func date(_ name: String) throws(OAuthError) -> Date? {
        guard let text = try string(name) else { return nil }
        guard let date = RFC3339Timestamp.date(from: text) else {
            throw .invalidRequest("\(name) must be an RFC 3339 date-time, e.g. 2025-01-31T00:00:00Z")
        }
        return date
    }

    /// An integer in `range`, or `fallback`.
    func integer(_ name: String, in range: ClosedRange<Int>, default fallback: Int) throws(OAuthError) -> Int {
        guard let text = try string(name) else { return fallback }
        guard let value = Int(text), range.contains(value) else {
            throw .invalidRequest("\(name) must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }
}

/// The filters of an event listing or export.
struct AuditEventFilter: Sendable, Equatable {
    var type: LatchkeyEventType?
    var clientID: String?
    var user: String?
    /// Inclusive lower bound on the event's `time`.
    var from: Date?
    /// Exclusive upper bound on the event's `time`.
    var to: Date?

    init(
        type: LatchkeyEventType? = nil, clientID: String? = nil, user: String? = nil, from: Date? = nil, to: Date? = nil
    ) {
        self.type = type
        self.clientID = clientID
        self.user = user
        self.from = from
        self.to = to
    }

    /// Reads `type` (a CloudEvents type or its topic name, e.g. `client-registered`), `client_id`,
    /// `user`, `from` and `to`.
    init(_ parameters: AuditQueryParameters) throws(OAuthError) {
        if let type = try parameters.string("type") {
            guard
                let known = LatchkeyEventType(rawValue: type)
                    ?? LatchkeyEventType.allCases.first(where: { $0.topicSuffix == type })
            else {
                let names = LatchkeyEventType.allCases.map(\.rawValue).joined(separator: ", ")
                throw .invalidRequest("type must be one of \(names)")
            }
            self.type = known
        }
        clientID = try parameters.string("client_id")
        user = try parameters.string("user")?.lowercased()
        from = try parameters.date("from")
        to = try parameters.date("to")
        if let from, let to, from >= to { throw .invalidRequest("from must be before to") }
    }

    /// A short digest binding cursors to these filters (FNV-1a; it guards against mistakes, not attackers).
    var digest: String {
        let text = [
            type?.rawValue ?? "", clientID ?? "", user ?? "",
            from.map(RFC3339Timestamp.string(from:)) ?? "", to.map(RFC3339Timestamp.string(from:)) ?? "",
        ].joined(separator: "\u{1F}")
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        return String(hash, radix: 16)
    }

    var fromText: String? { from.map(RFC3339Timestamp.string(from:)) }
    var toText: String? { to.map(RFC3339Timestamp.string(from:)) }
}
