import Foundation
import LatchkeyCore
import LatchkeyServer

/// The admin page's search form (`?user=&status=&template=&created_from=&created_to=&cursor=`), validated.
struct AdminPageFilters: Sendable {
    /// As typed, for re-display.
    var user = "", status = "", template = "", createdFrom = "", createdTo = ""
    var search = ClientSearch.Filters()
    var cursor: ClientSearch.Cursor?

    static let maximumQueryLength = 4096
    static let statuses = ["active", "revoked", "deleted", "expired"]

    /// Parses a query string; repeated or unknown-format values are `invalid_request`.
    init(query: String?) throws {
        let query = query ?? ""
        guard query.utf8.count <= Self.maximumQueryLength else {
            throw OAuthError.invalidRequest("the search is too long")
        }
        let form = try FormParameters.parse(query)
        user = try Self.text(form["user"], field: "user")
        if let uuid = UUID(uuidString: user) { search.userID = uuid } else if !user.isEmpty { search.username = user }
        status = form["status"] ?? ""
        if !status.isEmpty {
            guard let parsed = ClientStatus(rawValue: status) else { throw OAuthError.invalidRequest("unknown status") }
            search.status = parsed
        }
        template = try Self.text(form["template"], field: "template")
        search.softwareID = template.isEmpty ? nil : template
        createdFrom = form["created_from"] ?? ""
        search.createdFrom = try Self.day(createdFrom, field: "created from")
        createdTo = form["created_to"] ?? ""
        // Inclusive day: everything before the start of the next day.
        search.createdBefore = try Self.day(createdTo, field: "created to")?.addingTimeInterval(86_400)
        cursor = try form["cursor"].map(ClientSearch.Cursor.init(encoded:))
    }

    /// The filters (without the cursor) as a query string, for links and for returning after a form post.
    var query: String {
        let pairs = [
            ("user", user), ("status", status), ("template", template), ("created_from", createdFrom),
            ("created_to", createdTo),
        ]
        return pairs.filter { !$0.1.isEmpty }.map { "\($0.0)=\(Self.encode($0.1))" }.joined(separator: "&")
    }

    /// The query of the page after `cursor`.
    func query(after cursor: ClientSearch.Cursor) -> String {
        let filters = query
        return (filters.isEmpty ? "" : filters + "&") + "cursor=\(Self.encode(cursor.encoded))"
    }

    static func encode(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~")))
            ?? ""
    }

    private static func text(_ value: String?, field: String) throws -> String {
        let value = value?.trimmingCharacters(in: .whitespaces) ?? ""
        guard value.count <= 128, !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw OAuthError.invalidRequest("\(field) must be at most 128 printable characters")
        }
        return value
    }

    /// `YYYY-MM-DD` (what `<input type=date>` sends) as the start of that day in UTC.
    private static func day(_ value: String, field: String) throws -> Date? {
        guard !value.isEmpty else { return nil }
        guard value.utf8.count == 10, let date = RFC3339Timestamp.date(from: value + "T00:00:00Z") else {
            throw OAuthError.invalidRequest("\(field) must be a date (YYYY-MM-DD)")
        }
        return date
    }
}
