import Foundation
import Logging
import Testing

@testable import LatchkeyServer

@Suite struct JSONLogHandlerTests {
    struct Failure: Error, CustomStringConvertible {
        var description: String { "it broke" }
    }

    func logger(_ sink: JSONLogSink) -> Logger {
        var logger = Logger(label: "latchkey.test") { label in
            JSONLogHandler(label: label, service: "token-service", metadataProvider: nil, sink: sink)
        }
        logger.logLevel = .debug
        logger[metadataKey: "request_id"] = "r-1"
        return logger
    }

    func object(_ line: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    @Test func oneObjectPerLineWithTheFixedFieldsAndFlattenedMetadata() throws {
        let sink = JSONLogSink(capture: true)
        let logger = logger(sink)
        logger.info(
            "request \"done\"\nnext line\u{01}",
            metadata: [
                "status": .stringConvertible(200), "client": ["id": "c-1", "tenant": "acme"],
                "scopes": ["openid", "profile"], "message": "shadowed",
            ])
        logger.debug("debug line")
        logger.trace("not logged at debug")
        let lines = sink.lines
        #expect(lines.count == 2)
        #expect(lines.allSatisfy { !$0.contains("\n") })
        let first = try object(lines[0])
        #expect(first["level"] as? String == "info")
        #expect(first["service"] as? String == "token-service")
        #expect(first["logger"] as? String == "latchkey.test")
        #expect(first["source"] as? String == "LatchkeyServerTests")
        #expect(first["message"] as? String == "request \"done\"\nnext line\u{01}")
        #expect(first["request_id"] as? String == "r-1")
        #expect(first["status"] as? String == "200")
        #expect(first["client.id"] as? String == "c-1")
        #expect(first["client.tenant"] as? String == "acme")
        #expect(first["scopes"] as? [String] == ["openid", "profile"])
        #expect(first["metadata.message"] as? String == "shadowed")
        let timestamp = try #require(first["timestamp"] as? String)
        #expect(timestamp.wholeMatch(of: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/) != nil)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let date = try #require(formatter.date(from: timestamp))
        #expect(abs(date.timeIntervalSinceNow) < 60)
        #expect(try object(lines[1])["level"] as? String == "debug")
    }

    @Test func errorsAreFieldsAndTimestampsAreUTCWithMilliseconds() throws {
        let sink = JSONLogSink(capture: true)
        logger(sink).error("failed", error: Failure())
        let line = try object(try #require(sink.lines.first))
        #expect(line["error.message"] as? String == "it broke")
        #expect((line["error.type"] as? String)?.hasSuffix("Failure") == true)
        #expect(JSONLogHandler.timestamp(seconds: 0, milliseconds: 5) == "1970-01-01T00:00:00.005Z")
        #expect(JSONLogHandler.timestamp(seconds: 1_767_225_599, milliseconds: 999) == "2025-12-31T23:59:59.999Z")
    }
}
