import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyTestSupport
import PostgresNIO
import Synchronization
import Testing

@testable import AuditConsumer

/// The admin query API: listings with filters and stable cursors, timelines, export.
@Suite struct AuditQueryAPITests {
    @Test func listsEventsWithFiltersInBothOrders() async throws {
        let tenant = TestEnvironment.uniqueTenant("q")
        let factory = AuditEventFactory(tenant: tenant)
        let events = try (0..<140).map { try factory.mixed($0, clients: 7) }
        try await AuditQueryHarness.run(tenants: [tenant]) { api in
            try await AuditTest.store(events)
            let base = "/audit/t/\(tenant)/events"

            let newest = try await api.json("\(base)?limit=10")
            #expect(newest["order"] == "desc")
            #expect(AuditQueryHarness.sequences(newest["events"]?.arrayValue ?? []) == Array((131...140).reversed()))
            let oldest = try await api.json("\(base)?limit=10&order=asc")
            #expect(AuditQueryHarness.sequences(oldest["events"]?.arrayValue ?? []) == Array(1...10))
            #expect(oldest["prev_cursor"] == .null)

            let first = try #require(oldest["events"]?.arrayValue?.first)
            #expect(first["event_id"]?.stringValue == events[0].id.lowercased())
            #expect(first["type"] == "io.latchkey.client.registered.v1")
            #expect(first["event"]?["data"]?["client_id"] == "client-0")
            #expect(first["prev_hash"] == .string(AuditChain.genesisHash))
            #expect(first["source"]?["topic"] == "latchkey.client-registered")

            for type in ["token-issued", LatchkeyEventType.tokenIssued.rawValue] {
                let issued = try await api.allPages("\(base)?type=\(type)&limit=50").flatMap { $0 }
                #expect(issued.count == events.filter { $0.type == .tokenIssued }.count)
                #expect(issued.allSatisfy { $0["type"] == "io.latchkey.token.issued.v1" })
            }
            let byClient = try await api.allPages("\(base)?client_id=client-3&order=asc").flatMap { $0 }
            #expect(byClient.count == events.filter { $0.key == "\(tenant)/client-3" }.count)
            #expect(byClient.allSatisfy { $0["subject"] == "client-3" })
            let user = AuditEventFactory.user(3).uuidString
            let byUser = try await api.allPages("\(base)?user=\(user)").flatMap { $0 }
            #expect(!byUser.isEmpty)
            #expect(byUser.allSatisfy { $0["user_id"] == .string(user.lowercased()) })

            let now = Date()
            let from = RFC3339Timestamp.string(from: now.addingTimeInterval(-3600))
            let to = RFC3339Timestamp.string(from: now.addingTimeInterval(3600))
            let inWindow = try await api.allPages("\(base)?from=\(from)&to=\(to)&limit=500").flatMap { $0 }
            #expect(inWindow.count == events.count)
            let future = try await api.json("\(base)?from=\(to)")
            #expect(future["events"] == [])
            #expect(future["next_cursor"] == .null)
        }
    }

    @Test func cursorsPageBothWaysAndStayStableWhileEventsArrive() async throws {
        let tenant = TestEnvironment.uniqueTenant("page")
        let factory = AuditEventFactory(tenant: tenant)
        let initial = try factory.bulk(200, clients: 10)
        let arriving = try factory.bulk(300, clients: 10)
        try await AuditQueryHarness.run(tenants: [tenant]) { api in
            try await AuditTest.store(initial)
            let base = "/audit/t/\(tenant)/events"
            // Ingestion keeps appending to this tenant's chain while we page.
            let writer = Task {
                for start in stride(from: 0, to: arriving.count, by: 20) {
                    try await AuditTest.store(Array(arriving[start..<start + 20]), firstOffset: Int64(10_000 + start))
                }
            }
            let newestFirst = try await api.allPages("\(base)?limit=25").flatMap { AuditQueryHarness.sequences($0) }
            let oldestFirst = try await api.allPages("\(base)?limit=25&order=asc").flatMap {
                AuditQueryHarness.sequences($0)
            }
            try await writer.value

            // Newest first: starts at whatever the head was, then only ever older rows, each once.
            let top = try #require(newestFirst.first)
            #expect(top >= 200)
            #expect(newestFirst == Array((1...top).reversed()))
            // Oldest first: every row from 1 on, each once, new rows appearing at the end.
            let last = try #require(oldestFirst.last)
            #expect(last >= 200)
            #expect(oldestFirst == Array(1...last))

            // prev_cursor of page 3 is page 2, exactly; and prev of page 2 is page 1.
            let page1 = try await api.json("\(base)?limit=30&order=asc")
            let page2 = try await api.json("\(base)?limit=30&cursor=\(page1["next_cursor"]?.stringValue ?? "")")
            let page3 = try await api.json("\(base)?limit=30&cursor=\(page2["next_cursor"]?.stringValue ?? "")")
            let back2 = try await api.json("\(base)?limit=30&cursor=\(page3["prev_cursor"]?.stringValue ?? "")")
            #expect(back2["events"] == page2["events"])
            #expect(back2["next_cursor"] == page2["next_cursor"])
            let back1 = try await api.json("\(base)?limit=30&cursor=\(back2["prev_cursor"]?.stringValue ?? "")")
            #expect(back1["events"] == page1["events"])
            #expect(back1["prev_cursor"] == .null)
            #expect(AuditQueryHarness.sequences(page3["events"]?.arrayValue ?? []) == Array(61...90))
        }
    }

    @Test func clientTimelineTellsRegistrationIssuanceAndRevocationWithActorsAndReasons() async throws {
        let tenant = TestEnvironment.uniqueTenant("tl")
        let user = AuditEventFactory.user(42)
        var day1 = AuditEventFactory(tenant: tenant)
        day1.time = RFC3339Timestamp.date(from: "2025-05-01T09:00:00.000000Z")!
        var day2 = day1
        day2.time = RFC3339Timestamp.date(from: "2025-05-02T18:30:00.000000Z")!
        var events = [try day1.userRegistered(user: user), try day1.registered(client: "phone-1", user: user)]
        events += try (0..<3).map { _ in try day1.issued(client: "phone-1", user: user) }
        events += try (0..<2).map { _ in try day2.issued(client: "phone-1", user: user) }
        events.append(try day2.revoked(client: "phone-1", user: user, reason: .admin, detail: "device reported stolen"))
        events.append(try day1.registered(client: "tablet-1", user: user))
        events.append(try day2.issued(client: "mobile-dcr-client", user: user, grant: .authorizationCode))
        // Account events are about the user, not a client: listed under `account`, never as other activity.
        events += [try day2.passwordChanged(user: user), try day2.userDisabled(user: user)]
        let expected = events
        try await AuditQueryHarness.run(tenants: [tenant]) { api in
            try await AuditTest.store(expected)
            let phone = try await api.json("/audit/t/\(tenant)/clients/phone-1/timeline")
            #expect(phone["status"] == "revoked")
            #expect(phone["registration"]?["event"]?["data"]?["authenticated_user"] == .string(user.uuidString))
            #expect(phone["registration"]?["event"]?["data"]?["actor"]?["type"] == "user")
            let revocation = try #require(phone["revocations"]?.arrayValue?.first)
            #expect(revocation["event"]?["data"]?["reason"] == "admin")
            #expect(revocation["event"]?["data"]?["reason_detail"] == "device reported stolen")
            #expect(revocation["event"]?["data"]?["actor"] == ["type": "admin", "id": "alice@acme.example"])
            let tokens = try #require(phone["tokens"])
            #expect(tokens["issued_total"] == 5)
            #expect(tokens["per_day"]?.arrayValue?.map { $0["day"] } == ["2025-05-02", "2025-05-01"])
            #expect(tokens["per_day"]?.arrayValue?.map { $0["count"] } == [2, 3])
            #expect(tokens["first_issued_at"] == "2025-05-01T09:00:00.000000Z")
            #expect(tokens["last_issued_at"] == "2025-05-02T18:30:00.000000Z")
            #expect(tokens["last_issued"]?["type"] == "io.latchkey.token.issued.v1")

            let person = try await api.json("/audit/t/\(tenant)/users/\(user.uuidString)/timeline")
            #expect(person["user"] == .string(user.uuidString.lowercased()))
            #expect(
                person["account"]?.arrayValue?.map { $0["type"] } == [
                    "io.latchkey.user.registered.v1", "io.latchkey.user.password_changed.v1",
                    "io.latchkey.user.disabled.v1",
                ])
            #expect(person["instances"]?.arrayValue?.map { $0["client_id"] } == ["phone-1", "tablet-1"])
            #expect(person["instances"]?.arrayValue?.map { $0["status"] } == ["revoked", "active"])
            #expect(
                person["other_activity"] == [
                    [
                        "client_id": "mobile-dcr-client", "type": "io.latchkey.token.issued.v1", "count": 1,
                        "last_at": "2025-05-02T18:30:00.000000Z",
                    ]
                ])

            try await api.expectError("/audit/t/\(tenant)/clients/never-seen/timeline", .notFound, "not_found")
            try await api.expectError("/audit/t/\(tenant)/users/\(UUID().uuidString)/timeline", .notFound, "not_found")
        }
    }

    @Test func exportStreamsJSONLinesThatVerifyOffline() async throws {
        let tenant = TestEnvironment.uniqueTenant("exp")
        var early = AuditEventFactory(tenant: tenant)
        early.time = RFC3339Timestamp.date(from: "2025-01-01T00:00:00.000000Z")!
        var late = early
        late.time = RFC3339Timestamp.date(from: "2025-06-01T00:00:00.000000Z")!
        let events =
            try (0..<40).map { try early.mixed($0, clients: 4) } + (0..<60).map { try late.mixed($0, clients: 4) }
        try await AuditQueryHarness.run(tenants: [tenant]) { api in
            try await AuditTest.store(events)
            let response = try await api.get("/audit/t/\(tenant)/export")
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "application/x-ndjson")
            let lines = String(buffer: response.body).split(separator: "\n")
            #expect(lines.count == events.count)
            // Offline verification of the export with nothing but the documented canonical form.
            var previous = AuditChain.genesisHash
            for (index, line) in lines.enumerated() {
                let row = try StrictJSONParser.parse(String(line))
                #expect(row["sequence"] == .number(Double(index + 1)))
                #expect(row["prev_hash"] == .string(previous))
                let record = AuditChainRecord(
                    tenantID: tenant, sequence: Int64(index + 1), eventID: row["event_id"]?.stringValue ?? "",
                    eventType: row["type"]?.stringValue ?? "", subject: row["subject"]?.stringValue,
                    userID: row["user_id"]?.stringValue, eventTime: row["time"]?.stringValue ?? "",
                    storedAt: row["stored_at"]?.stringValue ?? "",
                    sourceTopic: row["source"]?["topic"]?.stringValue ?? "",
                    sourcePartition: Int32(row["source"]?["partition"]?.doubleValue ?? -1),
                    sourceOffset: Int64(row["source"]?["offset"]?.doubleValue ?? -1),
                    canonicalEvent: CanonicalJSON.encode(row["event"] ?? .null))
                let hash = AuditChain.hash(previous: previous, record: record)
                #expect(hash == row["hash"]?.stringValue, "line \(index + 1)")
                previous = hash ?? ""
            }
            let window = try await api.get(
                "/audit/t/\(tenant)/export?from=2025-05-01T00:00:00Z&to=2025-07-01T00:00:00Z")
            #expect(String(buffer: window.body).split(separator: "\n").count == 60)
            let empty = try await api.get("/audit/t/\(tenant)/export?to=2024-01-01T00:00:00Z")
            #expect(empty.status == .ok)
            #expect(empty.body.readableBytes == 0)
        }
    }

    @Test func aSuspendedTenantsHistoryStaysReadable() async throws {
        let tenant = TestEnvironment.uniqueTenant("susp")
        try await AuditQueryHarness.run(tenants: [tenant]) { api in
            try await AuditTest.store([
                try AuditEventFactory(tenant: tenant).registered(client: "c", user: AuditEventFactory.user(1))
            ])
            _ = try await TestDatabase.withApp { database in
                try await database.withTenantTransaction(tenant) {
                    try await $0.query("UPDATE tenants SET status = 'suspended'", logger: database.logger)
                }
            }
            let verify = try await api.json("/audit/t/\(tenant)/verify")
            #expect(verify["status"] == "ok")
            #expect(verify["count"] == 1)
        }
    }
}
