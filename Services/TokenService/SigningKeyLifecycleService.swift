import Foundation
import LatchkeyPersistence
import LatchkeyServer
import Logging
import ServiceLifecycle

/// Completes key rotations in the background (see ``SigningKeyRotation``): activates staged keys once
/// published for `publishDelay`, deletes retired keys after their tokens expired, and stages a key when a
/// tenant's policy switched `signing_algorithm`. Every replica runs it; the per-tenant locks make the
/// work happen once.
struct SigningKeyLifecycleService: Service {
    let rotation: SigningKeyRotation
    let systemDatabase: Database
    let interval: Duration
    let publishDelay: Duration
    /// Tenants handled per run at most; the rest wait for the next run.
    var batchLimit = 200

    private var logger: Logger { rotation.database.logger }

    func run() async throws {
        await runPeriodically(every: interval, name: "signing key lifecycle", logger: logger) {
            _ = try await runOnce()
        }
    }

    /// One run over every tenant with due work; returns what changed, by tenant.
    @discardableResult
    func runOnce() async throws -> [String: SigningKeyRotation.Progress] {
        let due = try await SigningKeyRotation.tenantsWithDueWork(
            publishDelay: publishDelay, limit: batchLimit, systemDatabase: systemDatabase)
        var changes: [String: SigningKeyRotation.Progress] = [:]
        for tenant in due {
            let progress = try await rotation.advance(tenant: tenant, publishDelay: publishDelay)
            guard !progress.isEmpty else { continue }
            changes[tenant] = progress
            logger.info(
                "signing keys advanced",
                metadata: [
                    "tenant": .string(tenant), "activated": .string(progress.activated ?? "-"),
                    "staged": .string(progress.staged ?? "-"),
                    "deleted": .string(progress.deleted.joined(separator: ",")),
                ])
        }
        return changes
    }
}
