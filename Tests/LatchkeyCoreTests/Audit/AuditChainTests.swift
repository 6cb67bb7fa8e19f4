import Foundation
import Testing

@testable import LatchkeyCore

/// The audit chain's canonical record and hash, pinned by a known answer computed outside Swift
/// (Python `hashlib` over the documented form), so the description in docs/audit-consumer.md stays true.
@Suite struct AuditChainTests {
    static let event =
        #"{"type":"io.latchkey.client.registered.v1","id":"3d5c9b8e-0f1a-4b2c-8d3e-4f5a6b7c8d9e","data":{"tenant":"acme","client_id":"c-1"}}"#

    static func record(sequence: Int64 = 1, userID: String? = nil) throws -> AuditChainRecord {
        AuditChainRecord(
            tenantID: "acme", sequence: sequence, eventID: "3d5c9b8e-0f1a-4b2c-8d3e-4f5a6b7c8d9e",
            eventType: "io.latchkey.client.registered.v1", subject: "c-1", userID: userID,
            eventTime: "2025-03-14T15:09:26.535897Z", storedAt: "2025-03-14T15:09:27.000001Z",
            sourceTopic: "latchkey.client-registered", sourcePartition: 3, sourceOffset: 42,
            canonicalEvent: CanonicalJSON.encode(try StrictJSONParser.parse(event)))
    }

    @Test func canonicalRecordIsTheDocumentedJCSObject() throws {
        let expected =
            #"{"event":{"data":{"client_id":"c-1","tenant":"acme"},"id":"3d5c9b8e-0f1a-4b2c-8d3e-4f5a6b7c8d9e","type":"io.latchkey.client.registered.v1"},"event_id":"3d5c9b8e-0f1a-4b2c-8d3e-4f5a6b7c8d9e","event_time":"2025-03-14T15:09:26.535897Z","event_type":"io.latchkey.client.registered.v1","sequence":1,"source_offset":42,"source_partition":3,"source_topic":"latchkey.client-registered","stored_at":"2025-03-14T15:09:27.000001Z","subject":"c-1","tenant_id":"acme","user_id":null}"#
        let bytes = try Self.record().canonicalBytes()
        #expect(String(decoding: bytes, as: UTF8.self) == expected)
        // It is itself canonical JSON: parsing and re-canonicalising changes nothing.
        #expect(CanonicalJSON.encode(try StrictJSONParser.parse(bytes)) == bytes)
    }

    @Test func hashesChainFromTheGenesisHash() throws {
        let first = AuditChain.hash(previous: AuditChain.genesisHash, record: try Self.record())
        #expect(first == "6febb888c446d15614ecbb869209b079b6898ea4b80ac785c173e7f80453ba69")
        let second = AuditChain.hash(
            previous: try #require(first),
            record: try Self.record(sequence: 2, userID: "5f0c6b1e-2a4d-4c8e-9b7a-1d2e3f405162"))
        #expect(second == "42203d4deecb63e4557f72a43617f7c71a85c9f9dcf002b0d55388de50e776ab")
    }

    @Test func anyChangeToTheRecordOrItsPredecessorChangesTheHash() throws {
        let base = try Self.record()
        let hash = AuditChain.hash(previous: AuditChain.genesisHash, record: base)
        var variants: [AuditChainRecord] = []
        for change in [
            { (r: inout AuditChainRecord) in r.tenantID = "acme2" }, { $0.sequence = 2 }, { $0.subject = nil },
            { $0.subject = "c-2" }, { $0.userID = "u" }, { $0.eventTime = "2025-03-14T15:09:26.535898Z" },
            { $0.storedAt = "2025-03-14T15:09:27.000002Z" }, { $0.sourceOffset = 43 }, { $0.sourcePartition = 0 },
            { $0.sourceTopic = "latchkey.client-revoked" }, { $0.eventType = "io.latchkey.client.revoked.v1" },
            { $0.canonicalEvent = Array(#"{"id":"x"}"#.utf8) },
        ] {
            var copy = base
            change(&copy)
            variants.append(copy)
        }
        for variant in variants {
            #expect(AuditChain.hash(previous: AuditChain.genesisHash, record: variant) != hash)
        }
        #expect(AuditChain.hash(previous: String(repeating: "1", count: 64), record: base) != hash)
        #expect(AuditChain.hash(previous: "not-hex", record: base) == nil)
        #expect(
            AuditChain.hash(previous: String(repeating: "A", count: 64), record: base) == nil,
            "hashes are lower-case hex")
    }
}
