import LatchkeyCore
import LatchkeyPersistence
import Synchronization

/// Client templates by tenant and `software_id`, including the knowledge that a `software_id` has none, so a
/// registration can be validated before its one statement. The statement checks the version it was validated
/// against (none included) and hands a stale request back; ``forget(softwareID:tenant:)`` then drops the entry.
final class TemplateCache: Sendable {
    /// Bound on entries, so a flood of made-up `software_id`s cannot grow memory without limit.
    static let maximumEntries = 1024

    private struct Key: Hashable {
        let tenant: String
        let softwareID: String
    }

    private let entries = Mutex<[Key: ClientTemplate?]>([:])

    /// The tenant's template for `softwareID` (nil: it has none), read from the database on a miss.
    func template(softwareID: String, tenant: String, database: Database) async throws -> ClientTemplate? {
        let key = Key(tenant: tenant, softwareID: softwareID)
        if let cached = entries.withLock({ $0[key] }) { return cached }
        let loaded = try await database.withTenantTransaction(tenant) { connection in
            try await RegistrationCredentialStore.template(
                softwareID: softwareID, tenant: tenant, on: connection, logger: database.logger)
        }
        entries.withLock { entries in
            if entries.count >= Self.maximumEntries { entries.removeAll(keepingCapacity: true) }
            entries[key] = .some(loaded)
        }
        return loaded
    }

    /// Drops what is known about `softwareID`: the template was created, changed or deleted.
    func forget(softwareID: String, tenant: String) {
        _ = entries.withLock { $0.removeValue(forKey: Key(tenant: tenant, softwareID: softwareID)) }
    }
}
