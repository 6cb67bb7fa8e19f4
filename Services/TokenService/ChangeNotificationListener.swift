import LatchkeyPersistence
import Logging
import PostgresNIO
import ServiceLifecycle

/// Listens, on one connection, to the PostgreSQL notification channels that triggers fill on commit, and
/// hands each payload to its subscription. A subscription is told when its channel starts being heard and
/// when it stops (a lost connection): caches built on notifications must not serve records while changes
/// could go unheard.
struct ChangeNotificationListener: Service {
    struct Subscription: Sendable {
        let channel: String
        let listening: @Sendable (Bool) -> Void
        let changed: @Sendable (String) -> Void
    }

    let subscriptions: [Subscription]
    let client: PostgresClient
    let logger: Logger

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await client.withConnection { connection in
                        try await withThrowingTaskGroup(of: Void.self) { group in
                            for subscription in subscriptions {
                                group.addTask {
                                    try await connection.listen(on: subscription.channel) { notifications in
                                        subscription.listening(true)
                                        for try await notification in notifications {
                                            subscription.changed(notification.payload)
                                        }
                                    }
                                }
                            }
                            // One channel ending (its connection lost) ends them all, to listen again together.
                            try await group.next()
                            group.cancelAll()
                        }
                    }
                } catch is CancellationError {
                    return
                } catch {
                    guard !Task.isCancelled else { return }
                    logger.warning(
                        "change notifications interrupted; cached records dropped",
                        metadata: ["error": "\(error.logDescription)"])
                }
                for subscription in subscriptions { subscription.listening(false) }
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }
}
