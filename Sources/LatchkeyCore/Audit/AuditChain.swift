import Crypto
import Foundation

/// One audit log row exactly as the tenant's hash chain covers it.
///
/// Times are RFC 3339 strings with six fractional digits and `Z` (what `RFC3339Timestamp` writes
/// and PostgreSQL gives back through `to_char`), so no floating-point date conversion sits between
/// hashing and verifying. `canonicalEvent` is the RFC 8785 form of the whole CloudEvent.
public struct AuditChainRecord: Sendable, Equatable {
    public var tenantID: String
    public var sequence: Int64
    /// Lower-case UUID text.
    public var eventID: String
    public var eventType: String
    public var subject: String?
    public var userID: String?
    public var eventTime: String
    public var storedAt: String
    public var sourceTopic: String
    public var sourcePartition: Int32
    public var sourceOffset: Int64
    public var canonicalEvent: [UInt8]

    public init(
        tenantID: String, sequence: Int64, eventID: String, eventType: String, subject: String?, userID: String?,
        eventTime: String, storedAt: String, sourceTopic: String, sourcePartition: Int32, sourceOffset: Int64,
        canonicalEvent: [UInt8]
    ) {
        self.tenantID = tenantID
        self.sequence = sequence
        self.eventID = eventID
        self.eventType = eventType
        self.subject = subject
        self.userID = userID
        self.eventTime = eventTime
        self.storedAt = storedAt
        self.sourceTopic = sourceTopic
        self.sourcePartition = sourcePartition
        self.sourceOffset = sourceOffset
        self.canonicalEvent = canonicalEvent
    }

    /// The canonical record: an RFC 8785 JSON object of every stored column except the hashes,
    /// members in code-unit order, `null` for an absent subject or user.
    public func canonicalBytes() -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(canonicalEvent.count + 400)
        func member(_ name: String, first: Bool = false) {
            if !first { output.append(UInt8(ascii: ",")) }
            CanonicalJSON.writeString(name, into: &output)
            output.append(UInt8(ascii: ":"))
        }
        func string(_ value: String?) {
            if let value {
                CanonicalJSON.writeString(value, into: &output)
            } else {
                output.append(contentsOf: "null".utf8)
            }
        }
        output.append(UInt8(ascii: "{"))
        member("event", first: true)
        output.append(contentsOf: canonicalEvent)
        member("event_id")
        string(eventID)
        member("event_time")
        string(eventTime)
        member("event_type")
        string(eventType)
        member("sequence")
        output.append(contentsOf: String(sequence).utf8)
        member("source_offset")
        output.append(contentsOf: String(sourceOffset).utf8)
        member("source_partition")
        output.append(contentsOf: String(sourcePartition).utf8)
        member("source_topic")
        string(sourceTopic)
        member("stored_at")
        string(storedAt)
        member("subject")
        string(subject)
        member("tenant_id")
        string(tenantID)
        member("user_id")
        string(userID)
        output.append(UInt8(ascii: "}"))
        return output
    }
}

/// The per-tenant hash chain of the audit log: `hash = SHA-256(prev_hash || canonical record)`.
public enum AuditChain {
    /// `prev_hash` of a tenant's first record: 32 zero bytes, in hex.
    public static let genesisHash = String(repeating: "0", count: 64)

    /// The lower-case hex hash of `record` after `previous` (64 hex digits); nil when `previous`
    /// is not a well-formed hash (only possible for a tampered row).
    public static func hash(previous: String, record: AuditChainRecord) -> String? {
        guard let previousBytes = hexBytes(previous), previousBytes.count == 32 else { return nil }
        var hasher = SHA256()
        hasher.update(data: previousBytes)
        hasher.update(data: record.canonicalBytes())
        return hex(hasher.finalize())
    }

    static func hex(_ digest: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var output: [UInt8] = []
        for byte in digest {
            output.append(digits[Int(byte >> 4)])
            output.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    static func hexBytes(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        func nibble(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
            default: return nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }
}
