import Logging
import Synchronization
import Testing

@testable import LatchkeyServer

/// The text format writes exactly the lines swift-log's stream handler writes for the same logger state.
struct TextLogHandlerTests {
    final class Capture: TextOutputStream, Sendable {
        private let lines = Mutex<[String]>([])
        func write(_ string: String) { lines.withLock { $0.append(string) } }
        /// Every line without its leading timestamp.
        var written: [String] { lines.withLock { $0.map { String($0.drop { $0 != " " }) } } }
    }

    @Test func linesMatchTheStreamHandlers() {
        let (plain, deferred) = (Capture(), Capture())
        let provider = Logger.MetadataProvider { ["trace_id": "t1", "request_id": "from-provider"] }
        var reference = Logger(label: "latchkey.test") { label in
            StreamLogHandler(label: label, stream: plain, metadataProvider: provider)
        }
        var logger = Logger(label: "latchkey.test") { label in
            TextLogHandler(wrapping: StreamLogHandler(label: label, stream: deferred, metadataProvider: provider))
        }
        for target in [0, 1] {
            func apply(_ change: (inout Logger) -> Void) { target == 0 ? change(&reference) : change(&logger) }
            apply { $0.info("before any metadata") }
            apply { $0[metadataKey: "request_id"] = "r-1" }
            apply { $0[metadataKey: "tenant"] = "acme" }
            apply { $0.warning("with metadata", metadata: ["tenant": "override", "n": ["nested": "1"]]) }
            apply { $0.logLevel = .error }
            apply { $0.warning("below the level") }
            apply { $0.error("at the level") }
        }
        #expect(deferred.written == plain.written)
        #expect(plain.written.count == 3)
        // The provider wins over the handler's metadata, the call's over both, as in the stream handler.
        #expect(
            deferred.written[1].contains("request_id=from-provider") && deferred.written[1].contains("tenant=override"))
    }
}
