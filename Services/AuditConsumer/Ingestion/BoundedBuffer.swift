import Synchronization

/// A bounded hand-over queue between one producing task and one consuming task.
///
/// `append` suspends while the buffer is full (back-pressure towards Kafka), `next` suspends
/// while it is empty. `finish` ends both sides: every stage of the ingestion pipeline calls it on
/// exit, so no stage can stay suspended after another stopped or was cancelled.
final class BoundedBuffer<Element: Sendable>: Sendable {
    private struct State {
        var items: [Element] = []
        var finished = false
        var waitingProducer: CheckedContinuation<Void, Never>?
        var waitingConsumer: CheckedContinuation<Void, Never>?
    }

    let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        precondition(capacity > 0, "a buffer needs room for one element")
        self.capacity = capacity
    }

    /// Adds `element`, waiting for room; false when the buffer was finished (the element is dropped).
    func append(_ element: Element) async -> Bool {
        while true {
            let accepted: Bool? = state.withLock { state in
                if state.finished { return false }
                guard state.items.count < capacity else { return nil }
                state.items.append(element)
                state.waitingConsumer.take()?.resume()
                return true
            }
            if let accepted { return accepted }
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state in
                    if state.finished || state.items.count < capacity { return true }
                    state.waitingProducer = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }
    }

    /// The oldest element, waiting for one; nil once the buffer is finished and empty.
    func next() async -> Element? {
        while true {
            let (element, finished): (Element?, Bool) = state.withLock { state in
                guard !state.items.isEmpty else { return (nil, state.finished) }
                state.waitingProducer.take()?.resume()
                return (state.items.removeFirst(), false)
            }
            if let element { return element }
            if finished { return nil }
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state in
                    if state.finished || !state.items.isEmpty { return true }
                    state.waitingConsumer = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }
    }

    /// Stops the buffer: appends fail, `next` drains what is left and then returns nil.
    func finish() {
        let (producer, consumer) = state.withLock { state in
            state.finished = true
            return (state.waitingProducer.take(), state.waitingConsumer.take())
        }
        producer?.resume()
        consumer?.resume()
    }
}
