import Foundation
import Hummingbird

/// A service's OpenAPI 3.1 document, served at `GET /openapi.json`.
///
/// The source is `docs/openapi/<service>.yaml`; `scripts/openapi.py bundle` writes the JSON copy each
/// service target ships as a resource (`Services/<Service>/OpenAPI/<service>.json`), and
/// `scripts/openapi.py check` keeps the two equal.
public struct OpenAPIDocument: Sendable {
    /// The document could not be found in the resource bundle.
    public struct Missing: Error, CustomStringConvertible {
        public var service: String
        public var description: String { "no OpenAPI document resource for \(service)" }
    }

    /// The JSON bytes exactly as shipped.
    public let json: ByteBuffer

    /// Loads the document of `service` (e.g. `token-service`) from `bundle`, the service target's resources.
    public init(service: String, bundle: Bundle) throws {
        guard
            let url = bundle.resourceURL?
                .appendingPathComponent("OpenAPI", isDirectory: true)
                .appendingPathComponent("\(service).json", isDirectory: false),
            let data = try? Data(contentsOf: url)
        else { throw Missing(service: service) }
        self.json = ByteBuffer(bytes: data)
    }

    /// Adds `GET /openapi.json`.
    public func register<Context: RequestContext>(on router: Router<Context>) {
        let json = self.json
        router.get("/openapi.json") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/json", .cacheControl: "public, max-age=300"],
                body: .init(byteBuffer: json))
        }
    }
}

/// How a router's routes and its OpenAPI document differ (`METHOD /path` entries, sorted).
public struct OpenAPIRouteComparison: Sendable, Equatable {
    /// Served by the router but absent from the document.
    public var undocumented: [String]
    /// In the document but not served by the router.
    public var unregistered: [String]
}

extension OpenAPIDocument {
    static let methods: Set<String> = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

    /// Every operation of the document as `METHOD /path` (path templates as written, e.g. `/t/{tenant}/jwks`).
    public func operations() -> Set<String> {
        guard
            let object = try? JSONSerialization.jsonObject(with: Data(json.readableBytesView)) as? [String: Any],
            let paths = object["paths"] as? [String: Any]
        else { return [] }
        var operations = Set<String>()
        for (path, item) in paths {
            guard let item = item as? [String: Any] else { continue }
            for method in item.keys where Self.methods.contains(method) {
                operations.insert("\(method.uppercased()) \(path)")
            }
        }
        return operations
    }

    /// Compares the document with the routes a Hummingbird router serves.
    public func compare<Context>(with router: Router<Context>) -> OpenAPIRouteComparison {
        compare(with: [router])
    }

    /// Compares the document with the routes of several routers (a service's routes on all of its ports).
    public func compare<Context>(with routers: [Router<Context>]) -> OpenAPIRouteComparison {
        let served = Set(
            routers.flatMap { router in router.routes.map { "\($0.method.rawValue) \($0.path.description)" } })
        let documented = operations()
        return OpenAPIRouteComparison(
            undocumented: served.subtracting(documented).sorted(), unregistered: documented.subtracting(served).sorted()
        )
    }
}
