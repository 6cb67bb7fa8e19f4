/// Reads samples out of a Prometheus text exposition (`/metrics`).
public enum PrometheusText {
    /// The value of the sample whose name and labels are exactly `series`
    /// (`name{label="value",…}` in the order the service exports them), if present.
    public static func value(_ text: String, _ series: String) -> Double? {
        text.split(separator: "\n").lazy
            .filter { $0.hasPrefix(series + " ") }
            .compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }
            .first
    }

    /// The metric names (without labels) of every sample in `text`.
    public static func names(_ text: String) -> Set<String> {
        Set(
            text.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap {
                $0.split(whereSeparator: { $0 == "{" || $0 == " " }).first.map(String.init)
            })
    }
}
