import Metrics
import Prometheus

/// The process-wide Prometheus registry behind swift-metrics; bootstrapped once per process.
public enum LatchkeyMetrics {
    public static let registry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return registry
    }()

    /// Forces the bootstrap; call early in `main` so metrics created before any request are kept.
    public static func bootstrap() {
        _ = registry
    }
}
