import Foundation
import LatchkeyCore
import LatchkeyServer

/// Which end of a tenant's log a listing starts from.
enum AuditOrder: String, Sendable {
    /// Newest first (descending sequence), the default.
    case newestFirst = "desc"
    /// Oldest first (ascending sequence).
    case oldestFirst = "asc"
}

/// An opaque, stable position in an event listing: a sequence number plus where to go from it.
///
/// Keyset paging on the per-tenant sequence, so rows stored while someone pages never shift a
/// page: newest-first pages only ever reach older rows, oldest-first pages see new rows at the
/// end. The cursor records the order and a digest of the filters it was made for; reusing it with
/// other filters is refused rather than silently producing a different listing.
struct AuditCursor: Sendable, Equatable {
    enum Direction: String, Sendable {
        /// Rows after `sequence` in listing order.
        case next
        /// Rows before `sequence` in listing order (the previous page).
        case previous = "prev"
    }

    static let maximumLength = 512

    var order: AuditOrder
    var direction: Direction
    var sequence: Int64
    var filterDigest: String

    func encoded() -> String {
        let object: JSONValue = [
            "v": 1, "o": .string(order.rawValue), "d": .string(direction.rawValue),
            "s": .number(Double(sequence)), "f": .string(filterDigest),
        ]
        return Base64URL.encode(Data(CanonicalJSON.encode(object)))
    }

    init(order: AuditOrder, direction: Direction, sequence: Int64, filterDigest: String) {
        self.order = order
        self.direction = direction
        self.sequence = sequence
        self.filterDigest = filterDigest
    }

    /// Parses a cursor from a request; every failure is the caller's fault (400).
    init(parsing text: String) throws(OAuthError) {
        let invalid = OAuthError.invalidRequest("cursor is not a cursor this API issued")
        guard text.utf8.count <= Self.maximumLength, let bytes = Base64URL.decode(text),
            let object = try? StrictJSONParser.parse([UInt8](bytes)).objectValue,
            object["v"] == 1, object.count == 5,
            let order = object["o"]?.stringValue.flatMap(AuditOrder.init(rawValue:)),
            let direction = object["d"]?.stringValue.flatMap(Direction.init(rawValue:)),
            let sequence = object["s"]?.doubleValue, sequence >= 0, sequence < 9e15, sequence.rounded() == sequence,
            let digest = object["f"]?.stringValue
        else { throw invalid }
        self.init(order: order, direction: direction, sequence: Int64(sequence), filterDigest: digest)
    }
}
