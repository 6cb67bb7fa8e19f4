import Synchronization

/// Wakes a waiting relay loop: a signal sent while nobody waits is kept (once) for the next wait, so
/// an insert notified between two rounds is never slept through. Signalled by the relay's `LISTEN`
/// connection and, for rows this process writes without a notification, by their writer.
public final class RelayWakeup: Sendable {
    private struct State {
        var signalled = false
        var waiter: (id: UInt64, continuation: CheckedContinuation<Bool, Never>)?
        var lastWait: UInt64 = 0
        /// The wait whose timeout fired before it had registered its continuation.
        var expiredWait: UInt64?
    }

    private let state = Mutex(State())

    public init() {}

    public func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard let waiter = state.waiter else {
                state.signalled = true
                return nil
            }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume(returning: true)
    }

    /// Returns true when signalled, false when `timeout` passed (or the task was cancelled) first.
    func wait(upTo timeout: Duration) async -> Bool {
        let id = nextWait()
        return await withTaskGroup(of: Void.self) { group in
            group.addTask {
                try? await Task.sleep(for: max(timeout, .zero))
                self.expire(id)
            }
            let signalled = await park(id)
            group.cancelAll()
            return signalled
        }
    }

    /// Returns true when signalled, false when the task was cancelled first. Sets no timer: a sleeping
    /// task that is cancelled still leaves its timer with the executor until the deadline, so a long
    /// timeout on a wait that a signal usually ends would pile timers up under load.
    func wait() async -> Bool {
        let id = nextWait()
        return await withTaskCancellationHandler {
            await park(id)
        } onCancel: {
            self.expire(id)
        }
    }

    private func nextWait() -> UInt64 {
        state.withLock { state in
            state.lastWait += 1
            return state.lastWait
        }
    }

    /// Waits as `id` until a signal (true) or ``expire(_:)`` of `id` (false); a signal kept from before,
    /// or an expiry that came first, ends it at once.
    private func park(_ id: UInt64) async -> Bool {
        await withCheckedContinuation { continuation in
            let immediate = state.withLock { state -> Bool? in
                if state.signalled {
                    state.signalled = false
                    return true
                }
                if state.expiredWait == id { return false }
                state.waiter = (id, continuation)
                return nil
            }
            if let immediate { continuation.resume(returning: immediate) }
        }
    }

    private func expire(_ id: UInt64) {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard let waiter = state.waiter, waiter.id == id else {
                state.expiredWait = id
                return nil
            }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume(returning: false)
    }
}
