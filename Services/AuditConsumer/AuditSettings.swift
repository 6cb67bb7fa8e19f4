import Configuration
import Foundation
import LatchkeyCore
import LatchkeyServer

/// What the audit consumer reads beyond ``ServiceSettings`` (listed in docs/configuration.md).
struct AuditSettings: Sendable {
    /// Consumer group of the ingestion; every replica shares it, so each record is stored once.
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
        let env = SettingsReader(reader)
        batchSize = try env.int("audit.batch.size", default: batchSize, range: 1...10_000)
        batchLinger = try env.milliseconds("audit.batch.linger.ms", default: 10, range: 0...10_000)
        maxInFlightBatches = try env.int("audit.max.in.flight.batches", default: maxInFlightBatches, range: 1...64)
        readyMaximumLag = Int64(try env.int("audit.ready.max.lag", default: 10_000, range: 1...Int(Int32.max)))
        lagInterval = try env.milliseconds("audit.lag.interval.ms", default: 5_000, range: 1...600_000)
        sessionTimeoutMilliseconds = try env.int(
            "audit.kafka.session.timeout.ms", default: sessionTimeoutMilliseconds, range: 1...300_000)
        heartbeatIntervalMilliseconds = try env.int(
            "audit.kafka.heartbeat.interval.ms", default: heartbeatIntervalMilliseconds, range: 1...60_000)
        tokenServicePublicURL = try env.baseURL("token.service.public.url") ?? tokenServicePublicURL
        platformTenant = try env.tenant("platform.tenant")
        let audiences = env.list("audit.admin.audience")
        adminAudiences = audiences.isEmpty ? nil : Set(audiences)
    }
}
