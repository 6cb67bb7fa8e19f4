import NIOCore

/// Runs a task's jobs on one NIO event loop: given as the task executor preference of an HTTP connection's
/// task, the connection's requests are read, handled and answered on the thread that does the connection's I/O,
/// instead of moving to Swift's cooperative pool and back for every read, every statement's answer and every
/// write (each move wakes another thread). Work that must not hold an event loop (password hashing) runs
/// on threads of its own.
public final class EventLoopTaskExecutor: TaskExecutor {
    public let eventLoop: any EventLoop

    public init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
