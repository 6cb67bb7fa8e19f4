import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Synchronization
import Testing

/// A journal of what each running test's applications do: service-group steps, servers starting and
/// stopping, the requests of the test clients. Written only when `LATCHKEY_TEST_JOURNAL` names a directory
/// (the test watchdog sets it), one file per test process, each line tagged with the test it belongs to.
/// A test that never finishes then shows the last step it reached, which a thread backtrace cannot: a
/// suspended task has no thread.
public enum TestJournal {
    private static let file: Mutex<FileHandle?> = {
        guard let directory = ProcessInfo.processInfo.environment["LATCHKEY_TEST_JOURNAL"], !directory.isEmpty else {
            return Mutex(nil)
        }
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = "\(directory)/journal-\(ProcessInfo.processInfo.processIdentifier).log"
        FileManager.default.createFile(atPath: path, contents: nil)
        return Mutex(FileHandle(forWritingAtPath: path))
    }()

    public static let isEnabled = file.withLock { $0 != nil }

    /// The running test's name as swift-testing prints it, so the watchdog can match the two.
    static var currentTest: String {
        Test.current.map { $0.displayName ?? $0.name } ?? "-"
    }

    /// Appends `event` for the current test (a task-local, so child tasks of the test are tagged with it).
    public static func record(_ event: @autoclosure () -> String) {
        guard isEnabled else { return }
        let line = "\(Date().formatted(.iso8601.time(includingFractionalSeconds: true)))\t\(currentTest)\t\(event())\n"
        file.withLock { $0?.write(Data(line.utf8)) }
    }
}

/// Copies the service lifecycle's and the HTTP server's steps (debug and up) into the ``TestJournal``;
/// other libraries only from notice up (the database driver's debug lines alone would drown them).
struct JournalLogHandler: LogHandler {
    static let journaledSources: Set<String> = ["ServiceLifecycle", "Hummingbird", "HummingbirdCore"]

    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .debug

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        guard Self.journaledSources.contains(event.source) || event.level >= .notice else { return }
        let fields = (metadata.merging(event.metadata ?? [:]) { $1 })
            .sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        TestJournal.record("log \(event.level) [\(event.source)] \(event.message) \(fields)")
    }
}

/// A test client that journals each request (method and path, never the query or body) and its status.
public struct JournaledTestClient: TestClientProtocol {
    let base: any TestClientProtocol

    public init(_ base: any TestClientProtocol) { self.base = base }

    public func executeRequest(uri: String, method: HTTPRequest.Method, headers: HTTPFields, body: ByteBuffer?)
        async throws -> TestResponse
    {
        let path = uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? uri
        TestJournal.record("request \(method) \(path)")
        do {
            let response = try await base.executeRequest(uri: uri, method: method, headers: headers, body: body)
            TestJournal.record("response \(response.status.code) to \(method) \(path)")
            return response
        } catch {
            TestJournal.record("request \(method) \(path) threw \(type(of: error))")
            throw error
        }
    }

    public var port: Int? { base.port }
}

extension ApplicationProtocol {
    /// `test(_:_:)` with its steps in the ``TestJournal``: started, the body entered once the application's
    /// services run, each request, the body's end and the application's shutdown.
    ///
    /// A body that throws still ends the application the way a passing one does, and its error is thrown
    /// afterwards: HummingbirdTesting cancels the application's task when the body throws, and a server
    /// cancelled while it holds accepted connections it has not handled yet traps (NIO's
    /// "Deinited NIOAsyncWriter without calling finish()").
    public func journaledTest<Value>(
        _ setup: TestingSetup, _ body: @Sendable (any TestClientProtocol) async throws -> Value
    ) async throws -> Value {
        TestJournal.record("application test starting")
        let outcome: Result<Value, any Error>
        do {
            outcome = try await test(setup) { client in
                TestJournal.record("application running, test body entered")
                do {
                    let value = try await body(TestJournal.isEnabled ? JournaledTestClient(client) : client)
                    TestJournal.record("test body finished, application shutting down")
                    return .success(value)
                } catch {
                    TestJournal.record("test body threw \(type(of: error)), application shutting down")
                    return .failure(error)
                }
            }
        } catch {
            TestJournal.record("application test threw \(type(of: error))")
            throw error
        }
        TestJournal.record("application test finished")
        return try outcome.get()
    }
}
