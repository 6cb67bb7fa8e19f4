import NIOCore

/// Holds bytes written to a channel until a ``RoundFlusher`` flushes them.
protocol RoundFlushable: AnyObject {
    func flushWritten()
}

/// Flushes what the proxy wrote to its channels once the event loop has handled every I/O event of its
/// current round, instead of after each request or response.
///
/// A flush to a peer waiting in `epoll_wait` wakes its thread, and waking a thread on another CPU costs the
/// waker far more than the write itself (on a virtual machine it is an exit to the hypervisor). Requests read
/// in one round, forwarded to the upstream, then cost one wake-up of it instead of one each, and likewise
/// the answers relayed to clients. Nothing waits longer than the round: the loop reads no answer to a
/// forwarded request before the round ends anyway. Confined to one event loop.
final class RoundFlusher {
    private let eventLoop: any EventLoop
    private var pending: [any RoundFlushable] = []

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func flushSoon(_ target: any RoundFlushable) {
        // A task enqueued on the loop's own thread runs after the events of the round, without a wake-up.
        if pending.isEmpty { eventLoop.assumeIsolated().execute { self.flushPending() } }
        pending.append(target)
    }

    private func flushPending() {
        // By index: a flush that fails can end an exchange and start the client's next one, which adds here.
        var index = 0
        while index < pending.count {
            pending[index].flushWritten()
            index += 1
        }
        pending.removeAll(keepingCapacity: true)
    }
}
