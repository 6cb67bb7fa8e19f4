import LatchkeyTestSupport
import Testing

/// The checker the end-to-end tests run over every service's `/metrics`: it must find each kind of break of
/// Prometheus' naming conventions, and nothing in a well-named exposition.
struct MetricNamingTests {
    @Test func aWellNamedExpositionPasses() {
        let text = """
            # TYPE latchkey_tokens_issued_total counter
            latchkey_tokens_issued_total{tenant="acme",grant_type="client_credentials"} 3
            # TYPE latchkey_http_request_duration_seconds histogram
            latchkey_http_request_duration_seconds_bucket{route="/t/{tenant}/token",le="0.005"} 1
            latchkey_http_request_duration_seconds_sum{route="/t/{tenant}/token"} 0.002
            latchkey_http_request_duration_seconds_count{route="/t/{tenant}/token"} 1
            # TYPE latchkey_outbox_oldest_unsent_age_seconds gauge
            latchkey_outbox_oldest_unsent_age_seconds 0
            # TYPE latchkey_kafka_library_info gauge
            latchkey_kafka_library_info{service="token-service",version="2.0.2, with a \\"quote\\", and = sign"} 1
            # TYPE latchkey_dpop_replay_cache_entries gauge
            latchkey_dpop_replay_cache_entries 3
            """
        #expect(PrometheusText.conventionViolations(text) == [])
    }

    @Test(arguments: [
        ("# TYPE latchkey_requests counter\nlatchkey_requests 1", "a counter's name ends in _total"),
        ("# TYPE latchkey_backlog_total gauge\nlatchkey_backlog_total 1", "_total is reserved for counters"),
        ("# TYPE latchkey_rows_count gauge\nlatchkey_rows_count 1", "reserved for histogram"),
        ("# TYPE latchkey_publish_latency gauge\nlatchkey_publish_latency 1", "measured in seconds"),
        (
            "# TYPE latchkey_batch_duration_ms histogram\nlatchkey_batch_duration_ms_count 1",
            "not a base unit"
        ),
        ("# TYPE latchkey_body_size gauge\nlatchkey_body_size 1", "names its unit"),
        ("# TYPE hb.requests counter\nhb.requests 1", "not a snake_case name"),
        ("# TYPE requests_total counter\nrequests_total 1", "latchkey_ prefix"),
        ("latchkey_untyped_thing 1", "without a # TYPE line"),
        ("# TYPE latchkey_x_total counter\nlatchkey_x_total{http.route=\"/\"} 1", "label http.route"),
        ("# TYPE latchkey_build_info counter\nlatchkey_build_info_total 1", "a counter's name ends in _total"),
        ("# TYPE latchkey_version_info histogram\nlatchkey_version_info_count 1", "an _info family is a gauge"),
    ])
    func eachBreakIsReported(text: String, problem: String) {
        let violations = PrometheusText.conventionViolations(text)
        #expect(violations.contains { $0.contains(problem) }, "\(violations)")
    }
}
