import BenchmarkSupport
import Foundation
import LatchkeyKafka
import PostgresNIO

/// Consumes the `ClientRegistered` topic and notes when each event (by CloudEvent `id`) arrived.
actor ConsumedEvents {
    private(set) var arrivals: [UUID: Double] = [:]

    func record(_ id: UUID, at time: Double) { arrivals[id] = time }
    var count: Int { arrivals.count }

    /// Reads `consumer` until it closes, recording each record's arrival time (epoch seconds).
    nonisolated func collect(from consumer: KafkaConsumer) async throws {
        struct Envelope: Decodable { let id: String }
        for try await message in consumer.messages {
            let now = Date().timeIntervalSince1970
            guard let envelope = try? JSONDecoder().decode(Envelope.self, from: Data(message.value)),
                let id = UUID(uuidString: envelope.id)
            else { continue }
            await record(id, at: now)
        }
    }
}

/// One outbox row of a registration: when it was written and when the relay had it acknowledged.
struct OutboxTimes {
    var created: Double
    var sent: Double?
}

enum OutboxQueries {
    static func count(_ database: PostgresClient, topic: String) async throws -> Int {
        let rows = try await database.query(
            "SELECT count(*)::int8 FROM outbox WHERE topic = \(topic)", logger: Bench.logger)
        for try await value in rows.decode(Int64.self) { return Int(value) }
        return 0
    }

    static func times(_ database: PostgresClient, topic: String) async throws -> [UUID: OutboxTimes] {
        let rows = try await database.query(
            """
            SELECT event_id, extract(epoch FROM created_at)::float8, extract(epoch FROM sent_at)::float8
            FROM outbox WHERE topic = \(topic)
            """, logger: Bench.logger)
        var times: [UUID: OutboxTimes] = [:]
        for try await (id, created, sent) in rows.decode((UUID, Double, Double?).self) {
            times[id] = OutboxTimes(created: created, sent: sent)
        }
        return times
    }

    /// Outbox → relay acknowledgement and outbox → consumed delays of the events written in `window`.
    static func delays(
        _ times: [UUID: OutboxTimes], arrivals: [UUID: Double], window: (start: Date, end: Date)
    ) -> (relay: Percentiles, consumed: Percentiles, missing: Int) {
        let start = window.start.timeIntervalSince1970
        let end = window.end.timeIntervalSince1970
        var relay: [Double] = []
        var consumed: [Double] = []
        var missing = 0
        for (id, row) in times where row.created >= start && row.created < end {
            if let sent = row.sent { relay.append(sent - row.created) }
            if let arrived = arrivals[id] { consumed.append(arrived - row.created) } else { missing += 1 }
        }
        return (Percentiles(relay), Percentiles(consumed), missing)
    }
}
