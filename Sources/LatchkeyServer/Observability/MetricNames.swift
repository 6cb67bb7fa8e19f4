/// Prometheus names for the metrics libraries create under their own names.
///
/// Hummingbird's request metrics use OpenTelemetry-style dotted names (`hb.requests`,
/// `http.server.request.duration`) that would be exported as a counter without `_total` and a duration
/// without its unit; here they get Latchkey names that follow the Prometheus conventions.
enum MetricNames {
    static let renamed: [String: String] = [
        "hb.requests": "latchkey_http_requests_total",
        "hb.request.errors": "latchkey_http_request_errors_total",
        "http.server.request.duration": "latchkey_http_request_duration_seconds",
        "http.server.active_requests": "latchkey_http_active_requests",
    ]

    static let renamedLabels: [String: String] = [
        "http.route": "route",
        "http.request.method": "method",
        "http.response.status_code": "status",
        "error.type": "status",
    ]

    /// The name and labels a metric is exported with.
    @Sendable static func sanitize(_ name: String, _ labels: [(String, String)]) -> (String, [(String, String)]) {
        guard let renamed = renamed[name] else { return (name, labels) }
        return (renamed, labels.map { (renamedLabels[$0.0] ?? $0.0, $0.1) })
    }
}
