import Tracing

/// W3C Trace Context between a service's operations and the Kafka records they cause: the `traceparent`
/// a context propagates (kept with an outbox row, sent as a record header) and the context a stored or
/// received `traceparent` names.
///
/// Everything goes through the bootstrapped instrument (swift-otel's W3C propagator when tracing is on), so
/// with tracing off nothing is injected and extraction yields a context without a span.
public enum KafkaTraceContext {
    public static let traceparentHeader = "traceparent"

    /// The `traceparent` of the span `context` holds; nil when it holds none or tracing is off.
    public static func traceparent(of context: ServiceContext) -> String? {
        var fields: [String: String] = [:]
        InstrumentationSystem.instrument.inject(context, into: &fields, using: FieldInjector())
        return fields[traceparentHeader]
    }

    /// The record header carrying the span `context` holds (none when it holds none or tracing is off).
    public static func headers(for context: ServiceContext) -> [KafkaHeader] {
        traceparent(of: context).map { [KafkaHeader(key: traceparentHeader, value: $0)] } ?? []
    }

    /// The header value of a record, as text (the caller validates it).
    public static func traceparentHeader(of message: KafkaConsumerMessage) -> String? {
        message.header(traceparentHeader).map { String(decoding: $0, as: UTF8.self) }
    }

    /// A top-level context continuing the remote span `traceparent` names (it must be valid W3C Trace
    /// Context; the instrument ignores anything else).
    public static func context(continuing traceparent: String) -> ServiceContext {
        var context = ServiceContext.topLevel
        InstrumentationSystem.instrument.extract(
            [traceparentHeader: traceparent], into: &context, using: FieldExtractor())
        return context
    }

    struct FieldInjector: Injector {
        func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) {
            carrier[key] = value
        }
    }

    struct FieldExtractor: Extractor {
        func extract(key: String, from carrier: [String: String]) -> String? {
            carrier[key]
        }
    }
}
