import Testing

@testable import LatchkeyPersistence

/// The relay's wait without a timeout: ended by a signal (also one sent before it began) or by cancellation.
@Suite struct RelayWakeupTests {
    @Test func aSignalSentBeforeTheWaitEndsItAtOnce() async {
        let wakeup = RelayWakeup()
        wakeup.signal()
        #expect(await wakeup.wait())
    }

    @Test func aSignalEndsAWaitInProgress() async {
        let wakeup = RelayWakeup()
        let waiting = Task { await wakeup.wait() }
        // Whether the waiter has registered yet or not: a signal sent before it does is kept for it.
        wakeup.signal()
        #expect(await waiting.value)
    }

    @Test func cancellationEndsAWaitWithoutASignal() async {
        let wakeup = RelayWakeup()
        let waiting = Task { await wakeup.wait() }
        waiting.cancel()
        #expect(await waiting.value == false)
        // The signal that did not come is still delivered to the next wait.
        wakeup.signal()
        #expect(await wakeup.wait())
    }
}
