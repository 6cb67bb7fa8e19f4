import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A child process started with `posix_spawn`, its output going to a file.
///
/// Not `Foundation.Process`: on Linux it watches children through a `select(2)`-based run loop
/// that corrupts memory once the test process holds more than 1024 descriptors (every suite runs
/// at once, with its Kafka clients and database pools), which crashed and hung whole test runs.
public final class ChildProcess: @unchecked Sendable {
    public let pid: pid_t
    /// Where stdout and stderr go.
    public let outputPath: String
    private let lock = NSLock()
    private var exitStatus: Int32?

    /// Starts `executable` with `arguments` and exactly `environment`; stdin reads `stdinPath` (else /dev/null).
    public init(executable: String, arguments: [String], environment: [String: String], stdinPath: String? = nil) throws
    {
        outputPath =
            FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-child-\(UUID().uuidString).log")
            .path
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, stdinPath ?? "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // The test process's sockets (NIO, PostgresNIO, librdkafka) are opened close-on-exec, so they stay out of the child.

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var child: pid_t = 0
        let result = posix_spawn(&child, executable, &actions, nil, argv, envp)
        guard result == 0 else {
            throw ChildProcessError(description: "could not start \(executable): \(String(cString: strerror(result)))")
        }
        pid = child
    }

    /// The exit status (or 128 + signal) once the child has ended; nil while it runs. Reaps it.
    public var status: Int32? {
        lock.lock()
        defer { lock.unlock() }
        if let exitStatus { return exitStatus }
        var raw: Int32 = 0
        guard waitpid(pid, &raw, WNOHANG) == pid else { return nil }
        // WIFEXITED / WEXITSTATUS / WTERMSIG are macros Swift cannot import.
        let signal = raw & 0x7f
        exitStatus = signal == 0 ? (raw >> 8) & 0xff : 128 + signal
        return exitStatus
    }

    public var isRunning: Bool { status == nil }

    /// Sends `signal` if the child still runs.
    public func send(_ signal: Int32) {
        if isRunning { kill(pid, signal) }
    }

    /// Waits up to `timeout` for the child to end; nil if it still runs.
    public func waitForExit(timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let status { return status }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return status
    }

    /// Blocks until the child ends (for short-lived helpers such as a Python validator).
    public func waitBlocking() -> Int32 {
        while true {
            if let status { return status }
            usleep(5_000)
        }
    }

    /// Everything the child wrote so far.
    public func output() -> String {
        (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
    }

    deinit {
        if status == nil {
            kill(pid, SIGKILL)
            var raw: Int32 = 0
            waitpid(pid, &raw, 0)
        }
        unlink(outputPath)
    }
}

/// A child process could not be started.
public struct ChildProcessError: Error, CustomStringConvertible {
    public let description: String
}
