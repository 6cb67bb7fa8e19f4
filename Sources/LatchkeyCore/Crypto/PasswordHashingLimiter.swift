import Foundation

/// Bounds how many password hashes (scrypt) run at once in this process, because each one holds
/// `128 · N · r` bytes: 128 MiB at N = 2^17, r = 8. A request that cannot get a slot within
/// ``maximumWait`` (or finds the queue full) is refused with ``Busy`` — answered 503 with
/// `Retry-After` — instead of piling up memory or starving other requests.
///
/// Hashes run on a GCD worker thread, not on the Swift concurrency pool or an event loop, so a slow hash never
/// blocks unrelated requests on a small machine.
public final class PasswordHashingLimiter: Sendable {
    /// No slot became free in time.
    public struct Busy: Error, Sendable {
        public let retryAfterSeconds: Int
    }

    public let maximumConcurrent: Int
    public let maximumWait: Duration
    /// Waiting requests beyond this are refused at once.
    public let maximumQueued: Int
    private let state: State

    public init(maximumConcurrent: Int, maximumWait: Duration = .seconds(2), maximumQueued: Int? = nil) {
        precondition(maximumConcurrent >= 1, "at least one concurrent hash")
        self.maximumConcurrent = maximumConcurrent
        self.maximumWait = maximumWait
        self.maximumQueued = maximumQueued ?? maximumConcurrent * 8
        self.state = State(free: maximumConcurrent)
    }

    /// One slot per core, at most 4: at most 512 MiB of scrypt memory at the default cost.
    public static var defaultConcurrency: Int { min(4, max(1, ProcessInfo.processInfo.activeProcessorCount)) }

    /// Runs `work` in a slot, off the concurrency pool.
    public func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await acquire()
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, any Error>, Never>) in
            DispatchQueue.global(qos: .userInitiated).async { continuation.resume(returning: Result { try work() }) }
        }
        await release()
        return try result.get()
    }

    /// Takes a slot, waiting at most ``maximumWait``; the caller must ``release()`` it.
    public func acquire() async throws {
        let granted = await state.enter(limit: maximumQueued, wait: maximumWait)
        guard granted else { throw Busy(retryAfterSeconds: max(1, Int(maximumWait.components.seconds) + 1)) }
    }

    public func release() async { await state.release() }

    private actor State {
        var free: Int
        var nextTicket: UInt64 = 0
        var waiters: [(ticket: UInt64, continuation: CheckedContinuation<Bool, Never>)] = []

        init(free: Int) { self.free = free }

        func enter(limit: Int, wait: Duration) async -> Bool {
            if free > 0 {
                free -= 1
                return true
            }
            guard wait > .zero, limit > waiters.count else { return false }
            nextTicket += 1
            let ticket = nextTicket
            return await withCheckedContinuation { continuation in
                waiters.append((ticket, continuation))
                Task { [weak self] in
                    try? await Task.sleep(for: wait)
                    await self?.timeOut(ticket)
                }
            }
        }

        /// A freed slot goes straight to the oldest waiter, so a newcomer cannot overtake it.
        func release() {
            if waiters.isEmpty {
                free += 1
            } else {
                waiters.removeFirst().continuation.resume(returning: true)
            }
        }

        func timeOut(_ ticket: UInt64) {
            guard let index = waiters.firstIndex(where: { $0.ticket == ticket }) else { return }
            waiters.remove(at: index).continuation.resume(returning: false)
        }
    }
}
