import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyKafka
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@testable import AuditConsumer

/// Refused records go to `latchkey.dead-letter` unchanged, with where they came from and why,
/// and the partition moves on to the valid records behind them.
@Suite struct AuditDeadLetterTests {
    @Test func refusedRecordsGoToTheDeadLetterTopicAndLaterEventsAreStored() async throws {
        let tenant = TestEnvironment.uniqueTenant("dlq")
        let factory = AuditEventFactory(tenant: tenant)
        let registeredTopic = LatchkeyEventType.clientRegistered.topic()
        let valid = try factory.registered(client: "c-ok", user: AuditEventFactory.user(1))
        let validObject = try #require(try StrictJSONParser.parse(valid.value).objectValue)
        func variant(_ change: (inout [String: JSONValue]) -> Void) -> String {
            var copy = validObject
            copy["id"] = .string(UUID().uuidString.lowercased())
            change(&copy)
            return String(decoding: CanonicalJSON.encode(.object(copy)), as: UTF8.self)
        }
        func withData(_ change: @escaping (inout [String: JSONValue]) -> Void) -> String {
            variant { event in
                var data = event["data"]?.objectValue ?? [:]
                change(&data)
                event["data"] = .object(data)
            }
        }
        // Each refused record and the reason label it must get.
        let refused: [(String, DeadLetterReason)] = [
            (#"{"specversion":"1.0","id":"#, .malformed),
            ("\u{FEFF}not json at all", .malformed),
            (#"[1,2,3]"#, .malformed),
            (withData { $0["client_secret"] = "s3cr3t-value" }, .schema),
            (variant { $0["type"] = "io.example.other.v1" }, .unknownType),
            (variant { $0["type"] = .string(LatchkeyEventType.clientRevoked.rawValue) }, .wrongTopic),
            (variant { $0["tenantid"] = "someone-else" }, .inconsistent),
            (withData { $0["client_name"] = "nul \u{0} inside" }, .unstorable),
            (
                variant { $0["padding"] = .string(String(repeating: "x", count: AuditEventDecoder.maximumEventSize)) },
                .oversized
            ),
        ]
        let after = try (0..<5).map { try factory.registered(client: "c-after-\($0)", user: AuditEventFactory.user(2)) }

        try await AuditTest.withCluster { cluster in
            let service = try await AuditTest.makeService(cluster: cluster)
            try await service.makeApplication().journaledTest(.router) { client in
                let reports = try await AuditTest.withProducer(cluster) { producer in
                    var reports: [KafkaDeliveryReport] = []
                    // One partition, in this order: every refused record sits before the valid ones.
                    for (raw, _) in refused {
                        reports.append(
                            try await producer.send(
                                KafkaOutgoingMessage(
                                    topic: registeredTopic, key: Array("\(tenant)/bad".utf8), value: Array(raw.utf8),
                                    headers: [KafkaHeader(key: "traceparent", value: "00-abc-def-01")], partition: 0)))
                    }
                    for event in after {
                        var message = event.outgoing
                        message.partition = 0
                        reports.append(try await producer.send(message))
                    }
                    return reports
                }
                try await AuditTest.waitForStored(after.count, tenants: [tenant])
                try await AuditTest.waitUntilCommitted(service, reports)
                #expect(try await AuditTest.storedCount(tenants: [tenant]) == after.count)

                let letters = try await Self.readDeadLetters(cluster, count: refused.count)
                for ((raw, reason), letter) in zip(refused, letters) {
                    #expect(letter.value == Array(raw.utf8), "original bytes are kept")
                    #expect(letter.header("dlq-reason").map { String(decoding: $0, as: UTF8.self) } == reason.rawValue)
                    #expect(letter.header("dlq-topic").map { String(decoding: $0, as: UTF8.self) } == registeredTopic)
                    #expect(letter.header("dlq-partition").map { String(decoding: $0, as: UTF8.self) } == "0")
                    #expect(letter.header("dlq-detail").map { !$0.isEmpty } == true)
                    #expect(letter.header("traceparent") != nil, "original headers are kept")
                    #expect(letter.key == Array("\(tenant)/bad".utf8))
                }
                let offsets = letters.compactMap {
                    $0.header("dlq-offset").flatMap { Int64(String(decoding: $0, as: UTF8.self)) }
                }
                #expect(offsets == reports.prefix(refused.count).map(\.offset))
                let schemaDetail = letters[3].header("dlq-detail").map { String(decoding: $0, as: UTF8.self) } ?? ""
                #expect(schemaDetail.contains("data.client_secret: member is not allowed"), "\(schemaDetail)")

                let metrics = try await ManagementClient(service.runtime.settings).execute(uri: "/metrics").text
                for reason in Set(refused.map(\.1)) {
                    let value = AuditTest.metric(
                        metrics, #"latchkey_audit_dead_letter_total{reason="\#(reason.rawValue)"}"#)
                    #expect((value ?? 0) >= 1, "\(reason)")
                }
            }
        }
    }

    @Test func anIdReusedForADifferentEventIsADeadLetterNotASilentDrop() async throws {
        let tenant = TestEnvironment.uniqueTenant("dlqid")
        let factory = AuditEventFactory(tenant: tenant)
        let original = try factory.registered(client: "c-1", user: AuditEventFactory.user(1))
        var forged = try #require(try StrictJSONParser.parse(original.value).objectValue)
        var data = forged["data"]?.objectValue ?? [:]
        data["client_name"] = "Someone else's device"
        forged["data"] = .object(data)
        var copy = original
        copy.value = CanonicalJSON.encode(.object(forged))
        let impostor = copy
        try await AuditTest.withCluster { cluster in
            let service = try await AuditTest.makeService(cluster: cluster)
            try await service.makeApplication().journaledTest(.router) { _ in
                let reports = try await AuditTest.withProducer(cluster) { producer in
                    try await AuditTest.send([original], with: producer)
                        + AuditTest.send([impostor], with: producer)
                }
                try await AuditTest.waitUntilCommitted(service, reports)
                let letters = try await Self.readDeadLetters(cluster, count: 1)
                #expect(letters.first?.value == impostor.value)
                #expect(letters.first?.header("dlq-reason") == Array("id_conflict".utf8))
                #expect(try await AuditTest.storedCount(tenants: [tenant]) == 1)
            }
        }
    }

    /// The first `count` records of the dead-letter topic.
    static func readDeadLetters(_ cluster: EmbeddedKafkaCluster, count: Int) async throws -> [KafkaConsumerMessage] {
        let reader = try KafkaConsumer(
            configuration: KafkaTestSupport.configuration(cluster, clientID: "dlq-reader"),
            groupID: "dlq-reader-\(UUID().uuidString.prefix(8))",
            subscription: .allPartitions(
                of: [DeadLetterPublisher.topic(prefix: LatchkeyEventType.defaultTopicPrefix)],
                startingAt: .beginning),
            logger: AuditTest.logger)
        defer { Task { await reader.close() } }
        return try await withThrowingTaskGroup(of: [KafkaConsumerMessage]?.self) { group in
            group.addTask {
                var letters: [KafkaConsumerMessage] = []
                for try await message in reader.messages {
                    letters.append(message)
                    if letters.count == count { return letters }
                }
                return letters
            }
            group.addTask {
                try await Task.sleep(for: .seconds(20))
                return nil
            }
            defer { group.cancelAll() }
            guard let letters = try await group.next() ?? nil else {
                throw AuditTestTimeout(description: "\(count) dead letters within 20 s")
            }
            return letters
        }
    }
}
