import Foundation
import HTTPTypes
import Hummingbird
import Synchronization

/// An OpenTelemetry collector stand-in for tests: keeps the protobuf bodies services export to
/// `POST /v1/traces` (OTLP/HTTP), to be searched for trace ids, service and span names.
public final class OTLPCollector: Sendable {
    private let bodies = Mutex<[[UInt8]]>([])
    private let apiKeys = Mutex<[String]>([])

    public init() {}

    /// Serve it with ``withLoopbackServer(_:_:)``; its port goes into `OTEL_EXPORTER_OTLP_ENDPOINT`.
    public var router: Router<BasicRequestContext> {
        let router = Router()
        router.post("v1/traces") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 16 << 20)
            self.bodies.withLock { $0.append(Array(body.readableBytesView)) }
            if let key = request.headers[HTTPField.Name("x-api-key")!] { self.apiKeys.withLock { $0.append(key) } }
            return Response(status: .ok, headers: [.contentType: "application/x-protobuf"])
        }
        return router
    }

    /// How many export requests arrived.
    public var exports: Int { bodies.withLock { $0.count } }

    /// The `x-api-key` header of each export request that had one: a collector's credential.
    public var receivedAPIKeys: [String] { apiKeys.withLock { $0 } }

    /// Whether, for each of `spans` (span names; none: any span), one export request holds the trace id (its
    /// 16 bytes, as OTLP encodes it), the exporting service's name (its `service.name` resource attribute)
    /// and that name. Spans ending at different times can arrive in different export requests.
    public func exported(traceID: String, by service: String, spans: [String] = []) -> Bool {
        let common = [Self.bytes(hex: traceID), Array(service.utf8)]
        let wanted = spans.isEmpty ? [common] : spans.map { common + [Array($0.utf8)] }
        return bodies.withLock { bodies in
            wanted.allSatisfy { needles in
                bodies.contains { body in needles.allSatisfy { Self.contains(body, $0) } }
            }
        }
    }

    static func bytes(hex: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex, let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex) {
            bytes.append(UInt8(hex[index..<next], radix: 16) ?? 0)
            index = next
        }
        return bytes
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { start in
            haystack[start..<(start + needle.count)].elementsEqual(needle)
        }
    }

    /// A fresh sampled W3C `traceparent` as a caller sends it, with its trace and span ids.
    public static func newTraceparent() -> (header: String, traceID: String, spanID: String) {
        let traceID = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        let spanID = String(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16))
        return ("00-\(traceID)-\(spanID)-01", traceID, spanID)
    }
}
