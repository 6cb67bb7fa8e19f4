import LatchkeyCore

/// The outcome of walking one tenant's chain.
struct ChainVerification: Sendable, Equatable {
    /// Records that verified, from sequence 1 on.
    var verifiedCount: Int64
    var headSequence: Int64
    var headHash: String
    /// The first sequence that does not verify, and why; nil when the whole chain verifies.
    var brokenSequence: Int64?
    var reason: String?

    var isIntact: Bool { brokenSequence == nil }

    var json: JSONValue {
        var object: [String: JSONValue] = [
            "status": .string(isIntact ? "ok" : "broken"),
            "count": .number(Double(verifiedCount)),
            "head_sequence": .number(Double(headSequence)),
            "head_hash": .string(headHash),
        ]
        if let brokenSequence, let reason {
            object["broken_sequence"] = .number(Double(brokenSequence))
            object["reason"] = .string(reason)
        }
        return .object(object)
    }
}

/// Recomputes a tenant's hash chain from the stored rows, streaming (one row in memory at a time).
///
/// Checks, in sequence order: no sequence is missing, each `prev_hash` is the previous record's
/// `hash` (the genesis hash for sequence 1), each `hash` is SHA-256 of the previous hash and the
/// record's canonical form rebuilt from its columns, and the chain head matches the last record.
/// Rows stored after the head was read are left for the next verification.
struct ChainVerifier: Sendable {
    let reader: AuditLogReader

    private struct Stop: Error {}

    func verify(tenant: String) async throws -> ChainVerification {
        let head = try await reader.head(tenant: tenant)
        var expected: Int64 = 1
        var previous = AuditChain.genesisHash
        var broken: (Int64, String)?
        do {
            try await reader.stream(tenant: tenant, filter: AuditEventFilter(), upTo: head.sequence) { row in
                if let failure = Self.check(row, expected: expected, previous: previous) {
                    broken = failure
                    throw Stop()
                }
                previous = row.hash
                expected += 1
            }
        } catch is Stop {}
        let verified = expected - 1
        if broken == nil, verified != head.sequence {
            broken = (expected, "record \(expected) is missing (the chain head is at \(head.sequence))")
        } else if broken == nil, previous != head.hash {
            broken = (head.sequence, "the chain head's hash differs from the hash of record \(head.sequence)")
        }
        return ChainVerification(
            verifiedCount: verified, headSequence: head.sequence, headHash: head.hash,
            brokenSequence: broken?.0, reason: broken?.1)
    }

    private static func check(_ row: StoredAuditEvent, expected: Int64, previous: String) -> (Int64, String)? {
        guard row.sequence == expected else {
            return (expected, "record \(expected) is missing (the next stored record is \(row.sequence))")
        }
        guard row.previousHash == previous else {
            return (row.sequence, "prev_hash differs from the hash of record \(row.sequence - 1)")
        }
        guard let record = row.chainRecord else {
            return (row.sequence, "the stored event is no longer a JSON document")
        }
        guard let hash = AuditChain.hash(previous: previous, record: record), hash == row.hash else {
            return (row.sequence, "the record's content does not match its hash")
        }
        return nil
    }
}
