import Dispatch
import Synchronization

/// A serial dispatch queue for librdkafka calls that block (polls, commits, flushes, metadata).
///
/// Those calls wait on librdkafka's own threads for up to their timeout; running them here keeps
/// Swift's cooperative pool free. Being serial also keeps each client's calls in submission order,
/// which matters for commits (a later offset must never be overtaken by an earlier one).
struct KafkaBlockingQueue: Sendable {
    private let queue: DispatchQueue

    init(label: String) {
        self.queue = DispatchQueue(label: label)
    }

    func run<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            queue.async {
                continuation.resume(returning: Result { () throws(E) -> T in try body() })
            }
        }
        return try result.get()
    }
}

/// A one-way flag that lets async code interrupt a blocking loop on a ``KafkaBlockingQueue``.
final class KafkaInterruptFlag: Sendable {
    private let raised = Atomic<Bool>(false)

    var isRaised: Bool { raised.load(ordering: .acquiring) }

    func raise() {
        raised.store(true, ordering: .releasing)
    }
}

extension Duration {
    /// Whole milliseconds, clamped to librdkafka's `int` range.
    var kafkaMilliseconds: Int32 {
        let (seconds, attoseconds) = components
        let milliseconds = seconds * 1_000 + attoseconds / 1_000_000_000_000_000
        return Int32(clamping: max(0, milliseconds))
    }
}
