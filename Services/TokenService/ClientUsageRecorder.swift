import Foundation
import LatchkeyPersistence
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// Records when clients were last used (what the gateway's inactive-client expiry measures) off the grant
/// path: grants note their client here, and every `interval` one statement per tenant writes the batch.
/// The database keeps writing a client at most once a minute. Nothing is written while no grant happens.
final class ClientUsageRecorder: Service, Sendable {
    private let database: Database
    private let interval: Duration
    private let pending = Mutex<[String: Set<String>]>([:])

    init(database: Database, interval: Duration = .seconds(5)) {
        self.database = database
        self.interval = interval
    }

    func record(tenant: String, clientID: String) {
        _ = pending.withLock { $0[tenant, default: []].insert(clientID) }
    }

    func run() async throws {
        while true {
            do {
                try await cancelWhenGracefulShutdown { [interval] in try await Task.sleep(for: interval) }
            } catch {
                break
            }
            await flush()
        }
        // What the last interval used is still written on the way out.
        await flush()
    }

    /// Writes every pending use; uses whose write failed are kept for the next flush.
    func flush() async {
        let batch = pending.withLock { pending in
            defer { pending.removeAll() }
            return pending
        }
        let now = Date()
        for (tenant, clients) in batch {
            do {
                try await database.client.query(
                    "SELECT record_client_use(\(tenant), \(Array(clients)), \(now))", logger: database.logger)
            } catch {
                database.logger.warning(
                    "recording client use failed; retried at the next flush",
                    metadata: ["tenant": "\(tenant)", "error": "\(error.logDescription)"])
                pending.withLock { $0[tenant, default: []].formUnion(clients) }
            }
        }
    }
}
