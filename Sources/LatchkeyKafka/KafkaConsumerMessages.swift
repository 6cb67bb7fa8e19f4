/// The records a ``KafkaConsumer`` reads, as an `AsyncSequence`.
public struct KafkaConsumerMessages: AsyncSequence, Sendable {
    public typealias Element = KafkaConsumerMessage

    let consumer: KafkaConsumer

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(consumer: consumer)
    }

    /// Pulls records by polling librdkafka on the consumer's dedicated queue.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let consumer: KafkaConsumer

        public mutating func next() async throws -> KafkaConsumerMessage? {
            while !Task.isCancelled {
                let interrupt = KafkaInterruptFlag()
                let consumer = self.consumer
                let outcome = await withTaskCancellationHandler {
                    await consumer.pollQueue.run { consumer.pollStep(interrupt: interrupt) }
                } onCancel: {
                    interrupt.raise()
                }
                switch outcome {
                case nil:
                    return nil  // closed or cancelled
                case .message(let message)?:
                    return message
                case .failure(let error)?:
                    throw error
                case .warning(let error)?:
                    // Partition-level errors are informational; librdkafka keeps fetching.
                    consumer.logWarning(error)
                }
            }
            return nil
        }
    }
}
