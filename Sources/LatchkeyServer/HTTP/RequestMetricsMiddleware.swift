import Hummingbird
import Metrics
import Synchronization

/// Per-request metrics: `latchkey_http_requests_total` and `latchkey_http_request_duration_seconds` by route,
/// method and status, `latchkey_http_request_errors_total` by route, method and the status of the error thrown,
/// and `latchkey_http_active_requests` by method.
///
/// A response whose body length is known (every response the services build is one buffer) is measured when
/// the handler returns it, and its body is left as it is: Hummingbird then writes head and body together, in
/// one system call, where a body wrapped to be measured after it was written goes out as a closure, head and
/// body in two writes (and two wake-ups of the client). A streamed body of unknown length is measured once it
/// has been written.
public struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    private let metrics: RequestMetrics

    /// Without a `factory` (a test gives its own), each metric is made with the process's backend when a request
    /// first needs it, so a router built before the backend is bootstrapped still reports.
    public init(factory: (any MetricsFactory)? = nil) {
        metrics = RequestMetrics(factory: factory)
    }

    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let start = ContinuousClock.now
        let active = metrics.active(method: request.method)
        active.increment()
        do {
            var response = try await next(request, context)
            let route = metrics.route(
                RequestMetrics.RouteKey(
                    route: context.endpointPath ?? "Unknown", method: request.method, status: response.status))
            guard response.body.contentLength == nil else {
                route.record(since: start, active: active)
                return response
            }
            let body = response.body
            response.body = ResponseBody { writer in
                defer { route.record(since: start, active: active) }
                try await body.write(writer)
            }
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status ?? .internalServerError
            let route = metrics.route(
                RequestMetrics.RouteKey(
                    route: context.endpointPath ?? "NotFound", method: request.method, status: status))
            route.errors.increment()
            route.record(since: start, active: active)
            throw error
        }
    }
}

/// The metric objects of each method and each route, method and status, made once and looked up per request.
final class RequestMetrics: Sendable {
    struct RouteKey: Hashable {
        let route: String
        let method: HTTPRequest.Method
        let status: HTTPResponse.Status
    }

    struct Route: Sendable {
        let requests: Counter
        let duration: Timer
        let errors: Counter

        init(_ key: RouteKey, factory: any MetricsFactory) {
            let dimensions = [
                ("route", key.route), ("method", key.method.rawValue), ("status", String(key.status.code)),
            ]
            requests = Counter(label: "latchkey_http_requests_total", dimensions: dimensions, factory: factory)
            duration = Timer(
                label: "latchkey_http_request_duration_seconds", dimensions: dimensions, preferredDisplayUnit: .seconds,
                factory: factory)
            errors = Counter(label: "latchkey_http_request_errors_total", dimensions: dimensions, factory: factory)
        }

        func record(since start: ContinuousClock.Instant, active: Meter) {
            requests.increment()
            let elapsed = (ContinuousClock.now - start).components
            duration.recordNanoseconds(elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000)
            active.decrement()
        }
    }

    private let factory: (any MetricsFactory)?
    private let methods = Mutex<[HTTPRequest.Method: Meter]>([:])
    private let routes = Mutex<[RouteKey: Route]>([:])

    init(factory: (any MetricsFactory)?) {
        self.factory = factory
    }

    func active(method: HTTPRequest.Method) -> Meter {
        methods.withLock { methods in
            if let meter = methods[method] { return meter }
            let meter = Meter(
                label: "latchkey_http_active_requests", dimensions: [("method", method.rawValue)],
                factory: factory ?? MetricsSystem.factory)
            methods[method] = meter
            return meter
        }
    }

    func route(_ key: RouteKey) -> Route {
        routes.withLock { routes in
            if let route = routes[key] { return route }
            let route = Route(key, factory: factory ?? MetricsSystem.factory)
            routes[key] = route
            return route
        }
    }
}
