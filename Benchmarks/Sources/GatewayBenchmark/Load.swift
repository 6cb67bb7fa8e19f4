import AsyncHTTPClient
import BenchmarkSupport
import Foundation
import NIOCore

/// What the paced phase measured.
struct LoadResult {
    var completed = 0
    var failed = 0
    /// Every request sent.
    var sent = 0
    var seconds = 0.0
    /// Request latencies (seconds) of successful registrations inside the measured window.
    var latencies: [Double] = []
    var failures: [String: Int] = [:]
    var window: (start: Date, end: Date) = (Date(), Date())

    var perSecond: Double { seconds > 0 ? Double(completed) / seconds : 0 }

    mutating func merge(_ other: LoadResult) {
        completed += other.completed
        failed += other.failed
        sent += other.sent
        latencies += other.latencies
        failures.merge(other.failures, uniquingKeysWith: +)
    }
}

/// What the report needs of a phase, however it was driven.
struct PhaseSummary {
    var perSecond: Double
    var completed: Int
    var failed: Int
    var failures: [String: Int] = [:]
    /// Every request sent (what the CPU and statement counts of a phase are divided by).
    var sent: Int
    /// `<phase>_http_p50_ms`, `_p99_ms`, …
    var latencyJSON: [String: Any]
    /// CPU microseconds of the load generator per request, when it ran in its own process.
    var generatorCPUMicroseconds: Double?
    var window: (start: Date, end: Date)

    init(_ name: String, paced result: LoadResult) {
        perSecond = result.perSecond
        completed = result.completed
        failed = result.failed
        failures = result.failures
        sent = result.sent
        latencyJSON = Percentiles(result.latencies).millisecondsJSON("\(name)_http")
        window = result.window
    }

    init(_ name: String, wrk result: WrkPhase.Result) {
        perSecond = result.perSecond
        completed = result.completed
        failed = result.failed
        sent = result.completed + result.failed
        latencyJSON = ["\(name)_http_p50_ms": result.p50 / 1000, "\(name)_http_p99_ms": result.p99 / 1000]
        generatorCPUMicroseconds = result.generatorCPU * 1e6 / Double(max(sent, 1))
        window = result.window
    }
}

/// Requests of the closed-loop phases, sent by `wrk`: one connection per thread, each thread with its own
/// initial access token, so that connections do not queue on one token row.
enum ClosedLoopRequests {
    static func perThread(path: String, tokens: [String], body: (Int, Int) -> String) -> [[WrkPhase.Request]] {
        tokens.enumerated().map { worker, token in
            (0..<500).map { sequence in
                WrkPhase.Request(
                    path: path,
                    headers: [("Content-Type", "application/json"), ("Authorization", "Bearer \(token)")],
                    body: body(worker, sequence))
            }
        }
    }
}

/// Sends registrations to the gateway at a fixed rate over one keep-alive connection per token.
struct RegistrationLoad: Sendable {
    let client: HTTPClient
    let url: String
    /// One initial access token per connection.
    let tokens: [String]

    /// Open loop at a fixed rate: request k is due at start + k / rate; latency counts from the due
    /// time, so a gateway that falls behind shows it.
    func paced(rate: Double, duration: Duration, body: @escaping @Sendable (Int, Int) -> String) async -> LoadResult {
        let clock = ContinuousClock()
        let start = clock.now
        let startDate = Date()
        let count = Int(rate * Bench.seconds(duration))
        let workers = tokens.count
        var total = await withTaskGroup(of: LoadResult.self) { group in
            for (worker, token) in tokens.enumerated() {
                group.addTask {
                    var result = LoadResult()
                    for index in stride(from: worker, to: count, by: workers) {
                        let due = start + .nanoseconds(Int64(Double(index) / rate * 1e9))
                        if due > clock.now { try? await Task.sleep(until: due, clock: clock) }
                        let outcome = await send(token: token, body: body(worker, index))
                        result.sent += 1
                        record(outcome, latency: Bench.seconds(clock.now - due), into: &result)
                    }
                    return result
                }
            }
            var merged = LoadResult()
            for await part in group { merged.merge(part) }
            return merged
        }
        total.seconds = Bench.seconds(clock.now - start)
        total.window = (startDate, Date())
        return total
    }

    private func record(_ outcome: Result<Void, BenchError>, latency: Double, into result: inout LoadResult) {
        switch outcome {
        case .success:
            result.completed += 1
            result.latencies.append(latency)
        case .failure(let error):
            result.failed += 1
            result.failures[error.description, default: 0] += 1
        }
    }

    private func send(token: String, body: String) async -> Result<Void, BenchError> {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.body = .bytes(ByteBuffer(string: body))
        do {
            let response = try await client.execute(request, timeout: .seconds(30))
            _ = try await response.body.collect(upTo: 64 * 1024)
            return response.status == .created ? .success(()) : .failure(BenchError("HTTP \(response.status.code)"))
        } catch {
            return .failure(BenchError("\(type(of: error))"))
        }
    }
}

/// Request bodies of the two registration kinds.
enum Bodies {
    /// Full RFC 7591 metadata, as a native app without a template sends it.
    static func full(worker: Int, sequence: Int) -> String {
        #"{"redirect_uris":["com.example.bench:/cb"],"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],"response_types":["code"],"application_type":"native","client_name":"Bench device \#(worker)-\#(sequence)","scope":"openid offline_access","dpop_bound_access_tokens":true,"software_version":"1.0"}"#
    }

    /// Templatized: only `software_id` and the one member the template lets an instance set.
    static func template(worker: Int, sequence: Int) -> String {
        #"{"software_id":"\#(Seeding.templateID)","client_name":"Bench device \#(worker)-\#(sequence)"}"#
    }
}
