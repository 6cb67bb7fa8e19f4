import Configuration
import Foundation
import LatchkeyCore

/// What the audit consumer reads beyond ``ServiceSettings`` (listed in docs/configuration.md).
struct AuditSettings: Sendable {
    /// Consumer group of the ingestion (DESIGN: `audit-consumer`).
    var groupID = "audit-consumer"
    /// Most records stored in one PostgreSQL transaction.
    var batchSize = 1_000
    /// How long a partly filled batch waits for more records before it is stored.
    var batchLinger: Duration = .milliseconds(10)
    /// Batches read from Kafka but not yet committed, at most (bounds memory and redelivery).
    var maxInFlightBatches = 4
    /// `/readyz` fails while the group's lag over all audit partitions exceeds this.
    var readyMaximumLag: Int64 = 10_000
    /// How often lag is measured (and the lag gauges refreshed).
    var lagInterval: Duration = .seconds(5)
    /// Consumer group session timeout and heartbeat (librdkafka `session.timeout.ms`, `heartbeat.interval.ms`).
    var sessionTimeoutMilliseconds = 10_000
    var heartbeatIntervalMilliseconds = 1_000
    /// Public base URL of the token service; admin tokens come from `{base}/t/{tenant}`.
    var tokenServicePublicURL = "http://127.0.0.1:8082"
    /// The tenant whose admin tokens may query every tenant's audit log.
    var platformTenant: TenantSlug?
    /// Accepted `aud` values of admin tokens; nil accepts any.
    var adminAudiences: Set<String>?

    init() {}

    /// Reads the `AUDIT_*`, `TOKEN_SERVICE_PUBLIC_URL` and `PLATFORM_TENANT` variables.
    init(reader: ConfigReader) throws {
        batchSize = try Self.positive(reader, "audit.batch.size", default: batchSize, maximum: 10_000)
        batchLinger = .milliseconds(
            try Self.positive(reader, "audit.batch.linger.ms", default: 10, maximum: 10_000, allowZero: true))
        maxInFlightBatches = try Self.positive(reader, "audit.max.in.flight.batches", default: maxInFlightBatches, maximum: 64)
        readyMaximumLag = Int64(try Self.positive(reader, "audit.ready.max.lag", default: 10_000, maximum: Int(Int32.max)))
        lagInterval = .milliseconds(try Self.positive(reader, "audit.lag.interval.ms", default: 5_000, maximum: 600_000))
        sessionTimeoutMilliseconds = try Self.positive(
            reader, "audit.kafka.session.timeout.ms", default: sessionTimeoutMilliseconds, maximum: 300_000)
        heartbeatIntervalMilliseconds = try Self.positive(
            reader, "audit.kafka.heartbeat.interval.ms", default: heartbeatIntervalMilliseconds, maximum: 60_000)
        tokenServicePublicURL = reader.string(forKey: "token.service.public.url", default: tokenServicePublicURL)
        guard tokenServicePublicURL.hasPrefix("https://") || tokenServicePublicURL.hasPrefix("http://") else {
            throw ConfigurationError("TOKEN_SERVICE_PUBLIC_URL must be an http(s) URL")
        }
        if let platform = reader.string(forKey: "platform.tenant"), !platform.isEmpty {
            guard let slug = TenantSlug(rawValue: platform) else {
                throw ConfigurationError("PLATFORM_TENANT must be a tenant slug ([a-z0-9][a-z0-9-]{0,62})")
            }
            platformTenant = slug
        }
        if let audiences = reader.string(forKey: "audit.admin.audience"), !audiences.isEmpty {
            adminAudiences = Set(audiences.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        }
    }

    private static func positive(
        _ reader: ConfigReader, _ key: String, default value: Int, maximum: Int, allowZero: Bool = false
    ) throws -> Int {
        guard let text = reader.string(forKey: ConfigKey(key)) else { return value }
        let name = key.uppercased().replacingOccurrences(of: ".", with: "_")
        guard let number = Int(text), number >= (allowZero ? 0 : 1), number <= maximum else {
            throw ConfigurationError("\(name) must be an integer from \(allowZero ? 0 : 1) to \(maximum)")
        }
        return number
    }
}
