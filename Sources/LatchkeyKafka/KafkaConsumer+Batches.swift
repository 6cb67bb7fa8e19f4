import Dispatch

extension KafkaConsumer {
    /// What one batch poll produced on the poll queue.
    private enum BatchOutcome: Sendable {
        case records([KafkaConsumerMessage], warnings: [KafkaError])
        case warnings([KafkaError])
        case failure(KafkaError)
        case closed
    }

    /// The next records, up to `maximum`, fetched in one trip to the poll thread.
    ///
    /// Waits for the first record like ``messages``, then keeps taking records for at most
    /// `linger` (or until `maximum`). A consumer of a busy stream pays one thread hand-over per
    /// batch instead of one per record. When the stream goes quiet mid-batch the batch can end up
    /// to one poll interval (100 ms) after `linger`. Returns nil once the consumer is closed or the
    /// task is cancelled; throws fatal consumer errors. Call from one task at a time.
    public func nextBatch(maximum: Int, linger: Duration) async throws -> [KafkaConsumerMessage]? {
        precondition(maximum > 0, "a batch holds at least one record")
        while !Task.isCancelled {
            let cancelled = KafkaInterruptFlag()
            let lingerOver = KafkaInterruptFlag()
            let consumer = self
            let outcome = await withTaskCancellationHandler {
                await pollQueue.run { consumer.pollBatch(maximum: maximum, linger: linger, cancelled, lingerOver) }
            } onCancel: {
                cancelled.raise()
                lingerOver.raise()
            }
            switch outcome {
            case .records(let records, let warnings):
                warnings.forEach(logWarning)
                return records
            case .warnings(let warnings):
                warnings.forEach(logWarning)
            case .failure(let error):
                throw error
            case .closed:
                return nil
            }
        }
        return nil
    }

    /// Runs on the poll queue: blocks for the first record, then collects until `maximum` or `linger`.
    private func pollBatch(
        maximum: Int, linger: Duration, _ cancelled: KafkaInterruptFlag, _ lingerOver: KafkaInterruptFlag
    ) -> BatchOutcome {
        var records: [KafkaConsumerMessage] = []
        var warnings: [KafkaError] = []
        switch pollStep(interrupt: cancelled) {
        case nil: return .closed
        case .failure(let error)?: return .failure(error)
        case .warning(let error)?: return .warnings([error])
        case .message(let record)?: records.append(record)
        }
        let nanoseconds = Int(
            clamping: linger.components.seconds * 1_000_000_000 + linger.components.attoseconds / 1_000_000_000)
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { lingerOver.raise() }
        while records.count < maximum, !lingerOver.isRaised {
            switch pollStep(interrupt: lingerOver) {
            case .message(let record)?: records.append(record)
            case .warning(let error)?: warnings.append(error)
            // The fatal error comes back on the next call; first hand over what was read.
            case .failure?, nil: return .records(records, warnings: warnings)
            }
        }
        return .records(records, warnings: warnings)
    }
}
