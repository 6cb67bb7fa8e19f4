import LatchkeyPersistence
import Logging
import ServiceLifecycle

/// The loop of a background job: `body` runs after `delay` (at once by default) and then every `interval` until graceful shutdown
/// (or cancellation); a failed run is logged as `name` failed and retried at the next interval.
/// `interval` is read again before each pause, so a job may pause differently as its state changes.
public func runPeriodically(
    every interval: @autoclosure @escaping @Sendable () -> Duration, name: String, logger: Logger,
    startingAfter delay: Duration = .zero,
    _ body: @escaping @Sendable () async throws -> Void
) async {
    await cancelWhenGracefulShutdown {
        if delay > .zero {
            do { try await Task.sleep(for: delay) } catch { return }
        }
        while !Task.isCancelled {
            do {
                try await body()
            } catch is CancellationError {
                return
            } catch {
                logger.warning("\(name) run failed", metadata: ["error": "\(error.logDescription)"])
            }
            do { try await Task.sleep(for: interval()) } catch { return }
        }
    }
}
