import Foundation

/// `--name value` command-line options with defaults.
struct Arguments {
    private var values: [String: String] = [:]

    init(_ arguments: [String]) throws {
        var iterator = arguments.makeIterator()
        while let name = iterator.next() {
            guard name.hasPrefix("--"), let value = iterator.next() else {
                throw BenchmarkError("expected --name value, got \(name)")
            }
            values[String(name.dropFirst(2))] = value
        }
    }

    func string(_ name: String, _ fallback: String) -> String { values[name] ?? fallback }

    func int(_ name: String, _ fallback: Int) throws -> Int {
        guard let raw = values[name] else { return fallback }
        guard let value = Int(raw) else { throw BenchmarkError("--\(name) must be an integer") }
        return value
    }

    func double(_ name: String, _ fallback: Double) throws -> Double {
        guard let raw = values[name] else { return fallback }
        guard let value = Double(raw) else { throw BenchmarkError("--\(name) must be a number") }
        return value
    }
}

struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
