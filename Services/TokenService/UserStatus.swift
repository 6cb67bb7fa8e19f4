import Foundation
import Logging
import PostgresNIO

/// Whether a user may still sign in and obtain tokens (not locked or disabled); read inside a
/// tenant-scoped transaction.
enum UserStatus {
    static func isActive(_ userID: UUID, on connection: PostgresConnection, logger: Logger) async throws -> Bool {
        let rows = try await connection.query("SELECT status FROM users WHERE user_id = \(userID)", logger: logger)
        for try await status in rows.decode(String.self) { return status == "active" }
        return false
    }
}
