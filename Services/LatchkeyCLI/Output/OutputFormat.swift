import ArgumentParser

/// How a command prints its result: a table for people, JSON for scripts.
enum OutputFormat: String, ExpressibleByArgument, CaseIterable, Sendable {
    case table
    case json
}
