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

extension PrometheusText {
    /// Where an exposition breaks Prometheus' naming conventions, one line per problem (empty when none):
    /// every family is typed; names and label names are snake_case ASCII and ours start with `latchkey_`;
    /// a counter's name ends in `_total` and nothing else does, nor in a histogram's `_count`, `_sum` or `_bucket`; a duration, latency, delay, age or timestamp is in
    /// seconds (`_seconds`, never milli- or microseconds); sizes are in `_bytes`; `_info` families are gauges.
    public static func conventionViolations(_ text: String) -> [String] {
        var problems: [String] = []
        var types: [String: String] = [:]
        let lines = text.split(separator: "\n").map(String.init)
        for line in lines where line.hasPrefix("# TYPE ") {
            let parts = line.split(separator: " ").map(String.init)
            guard parts.count == 4 else {
                problems.append("malformed TYPE line: \(line)")
                continue
            }
            types[parts[2]] = parts[3]
        }
        for (name, type) in types.sorted(by: { $0.key < $1.key }) {
            problems += familyViolations(name: name, type: type)
        }
        for line in lines where !line.hasPrefix("#") && !line.isEmpty {
            let name = String(line.prefix { $0 != "{" && $0 != " " })
            let family = [name, familyName(of: name)].first { types[$0] != nil }
            if family == nil { problems.append("\(name): a sample without a # TYPE line") }
            for label in labelNames(line) where !isSnakeCase(label) || label.hasPrefix("__") {
                problems.append("\(name): label \(label) is not a snake_case name")
            }
        }
        return problems
    }

    private static func familyViolations(name: String, type: String) -> [String] {
        var problems: [String] = []
        let words = name.split(separator: "_").map(String.init)
        if !isSnakeCase(name) { problems.append("\(name): not a snake_case name") }
        if !name.hasPrefix("latchkey_") && !name.hasPrefix("process_") {
            problems.append("\(name): not under the latchkey_ prefix")
        }
        switch type {
        case "counter" where !name.hasSuffix("_total"):
            problems.append("\(name): a counter's name ends in _total")
        case "gauge", "histogram", "summary", "untyped":
            if name.hasSuffix("_total") { problems.append("\(name): _total is reserved for counters (\(type))") }
            if ["_count", "_sum", "_bucket"].contains(where: name.hasSuffix) {
                problems.append("\(name): _count, _sum and _bucket are reserved for histogram and summary series")
            }
        case "counter": break
        default: problems.append("\(name): unknown type \(type)")
        }
        let timeWords: Set = ["duration", "latency", "delay", "age", "timestamp", "time", "seconds", "elapsed"]
        let base = type == "counter" ? Array(words.dropLast()) : words
        if !Set(words).isDisjoint(with: timeWords) && base.last != "seconds" {
            problems.append("\(name): a time is measured in seconds and the name ends in _seconds")
        }
        let scaledUnits: Set = [
            "ms", "milliseconds", "us", "microseconds", "ns", "nanoseconds", "minutes", "hours", "kb", "kilobytes",
            "mb", "megabytes", "percent",
        ]
        if let unit = words.first(where: scaledUnits.contains) {
            problems.append("\(name): \(unit) is not a base unit (seconds, bytes, ratio)")
        }
        if words.contains("size") && base.last != "bytes" && base.last != "entries" {
            problems.append("\(name): a size names its unit (_bytes or _entries)")
        }
        if name.hasSuffix("_info") && type != "gauge" { problems.append("\(name): an _info family is a gauge") }
        return problems
    }

    /// The family a histogram or summary sample belongs to (`x_bucket`, `x_sum`, `x_count` → `x`).
    private static func familyName(of sample: String) -> String {
        for suffix in ["_bucket", "_sum", "_count"] where sample.hasSuffix(suffix) {
            return String(sample.dropLast(suffix.count))
        }
        return sample
    }

    private static func labelNames(_ line: String) -> [String] {
        guard let open = line.firstIndex(of: "{"), let close = line.lastIndex(of: "}"), open < close else { return [] }
        var names: [String] = []
        var inValue = false
        var escaped = false
        var current = ""
        for character in line[line.index(after: open)..<close] {
            if inValue {
                if escaped {
                    escaped = false
                } else if character == "\\" {
                    escaped = true
                } else if character == "\"" {
                    inValue = false
                }
            } else if character == "=" {
                names.append(current)
                current = ""
            } else if character == "\"" {
                inValue = true
            } else if character != "," {
                current.append(character)
            }
        }
        return names
    }

    private static func isSnakeCase(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first == "_" || ("a"..."z").contains(first) else { return false }
        return name.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }
    }
}
