import Hummingbird
import Prometheus

/// A named dependency check behind `/readyz`. A required check that fails makes the service unready; any
/// other failing check only marks it degraded (still ready, the body says which dependency is missing).
public struct ReadinessCheck: Sendable {
    /// What one run of a check found.
    public enum Outcome: Sendable, Equatable {
        /// The dependency is usable; the value is what `/readyz` reports for it (`ok` unless there is more
        /// to say, e.g. a newer schema this build still works with).
        case passed(String)
        case failed
    }

    public let name: String
    public let isRequired: Bool
    public let report: @Sendable () async -> Outcome

    public init(_ name: String, isRequired: Bool = true, report: @escaping @Sendable () async -> Outcome) {
        self.name = name
        self.isRequired = isRequired
        self.report = report
    }

    public init(_ name: String, isRequired: Bool = true, check: @escaping @Sendable () async -> Bool) {
        self.init(name, isRequired: isRequired) { await check() ? .passed("ok") : .failed }
    }
}

/// `/healthz`, `/readyz` and `/metrics`, the same on every service.
///
/// The management listener starts before the service's own: until `isListening` says that one accepts
/// connections, `/healthz` and `/readyz` answer 503 `{"status":"starting"}`, so a probe (or a test) that
/// sees 200 can connect to the service port at once.
public struct HealthRoutes<Context: RequestContext>: Sendable {
    public let checks: [ReadinessCheck]
    public let registry: PrometheusCollectorRegistry
    public let isListening: @Sendable () -> Bool

    public init(
        checks: [ReadinessCheck], registry: PrometheusCollectorRegistry = LatchkeyMetrics.registry,
        isListening: @escaping @Sendable () -> Bool = { true }
    ) {
        self.checks = checks
        self.registry = registry
        self.isListening = isListening
    }

    public func register(on router: Router<Context>) {
        let isListening = self.isListening
        router.get("/healthz") { _, _ in
            guard isListening() else { return Self.starting }
            return Self.json(.ok, ["status": "ok"])
        }
        router.get("/readyz") { _, _ in
            guard isListening() else { return Self.starting }
            // Checks run concurrently so one slow dependency does not hide the others' state.
            let results = await withTaskGroup(of: (String, String).self) { group in
                for check in checks {
                    group.addTask {
                        switch await check.report() {
                        case .passed(let state): (check.name, state)
                        case .failed: (check.name, check.isRequired ? "failing" : "degraded")
                        }
                    }
                }
                var results: [String: String] = [:]
                for await (name, state) in group { results[name] = state }
                return results
            }
            let ready = !results.values.contains("failing")
            var body = results
            body["status"] = !ready ? "not_ready" : results.values.contains("degraded") ? "degraded" : "ready"
            return Self.json(ready ? .ok : .serviceUnavailable, body)
        }
        router.get("/metrics") { _, _ in
            var buffer: [UInt8] = []
            registry.emit(into: &buffer)
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: buffer)))
        }
    }

    static var starting: Response { json(.serviceUnavailable, ["status": "starting"]) }

    static func json(_ status: HTTPResponse.Status, _ body: [String: String]) -> Response {
        let pairs = body.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\"\($0.value)\"" }
        return Response(
            status: status, headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: "{" + pairs.joined(separator: ",") + "}")))
    }
}
