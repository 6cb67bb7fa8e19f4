import Foundation
import Hummingbird
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging

/// The admin-only audit query API under `/audit/t/{tenant}`.
///
/// Every route runs behind ``AdminAuthMiddleware`` (admin token of the tenant or of the platform
/// tenant) and ``TenantResolverMiddleware`` (unknown tenants are 404, suspended ones stay readable),
/// and every read runs in the tenant's Row-Level Security scope.
struct AuditQueryController: Sendable {
    typealias Context = LatchkeyRequestContext

    static let defaultLimit = 100
    static let maximumLimit = 500
    static let maximumIdentifierLength = 255

    let reader: AuditLogReader
    let verifier: AdminTokenVerifier
    let tenants: TenantDirectory

    func addRoutes(to router: Router<Context>) {
        let group = router.group("/audit/t/{tenant}")
            .add(middleware: AdminAuthMiddleware(verifier: verifier))
            .add(middleware: TenantResolverMiddleware(directory: tenants, admitsSuspended: true))
        group.get("/events", use: events)
        group.get("/clients/{client_id}/timeline", use: clientTimeline)
        group.get("/users/{user}/timeline", use: userTimeline)
        group.get("/verify", use: verify)
        group.get("/export", use: export)
    }

    @Sendable func events(_ request: Request, context: Context) async throws -> Response {
        let tenant = try context.requireTenant().id
        let parameters = try AuditQueryParameters(
            request, allowed: ["type", "client_id", "user", "from", "to", "limit", "cursor", "order"])
        let filter = try AuditEventFilter(parameters)
        let limit = try parameters.integer("limit", in: 1...Self.maximumLimit, default: Self.defaultLimit)
        var order = AuditOrder.newestFirst
        if let text = try parameters.string("order") {
            guard let parsed = AuditOrder(rawValue: text) else {
                throw OAuthError.invalidRequest("order must be desc or asc")
            }
            order = parsed
        }
        var cursor: AuditCursor?
        if let text = try parameters.string("cursor") {
            let parsed = try AuditCursor(parsing: text)
            guard parsed.filterDigest == filter.digest else {
                throw OAuthError.invalidRequest("cursor belongs to a listing with other filters")
            }
            if try parameters.string("order") != nil, parsed.order != order {
                throw OAuthError.invalidRequest("order differs from the cursor's order")
            }
            order = parsed.order
            cursor = parsed
        }
        let page = try await reader.page(tenant: tenant, filter: filter, order: order, cursor: cursor, limit: limit)
        return Self.json(
            .object([
                "tenant": .string(tenant),
                "order": .string(order.rawValue),
                "events": .array(page.events.map(\.view)),
                "next_cursor": page.next.map { .string($0.encoded()) } ?? .null,
                "prev_cursor": page.previous.map { .string($0.encoded()) } ?? .null,
            ]))
    }

    @Sendable func clientTimeline(_ request: Request, context: Context) async throws -> Response {
        try await timeline(request, context, parameter: "client_id", subject: "client") { reader, tenant, clientID in
            try await AuditTimelines(reader: reader).client(tenant: tenant, clientID: clientID)
        }
    }

    @Sendable func userTimeline(_ request: Request, context: Context) async throws -> Response {
        try await timeline(request, context, parameter: "user", subject: "user") { reader, tenant, user in
            try await AuditTimelines(reader: reader).user(tenant: tenant, user: user.lowercased())
        }
    }

    /// A timeline route: no query parameters, one identifier in the path, 404 when the log knows nothing.
    private func timeline(
        _ request: Request, _ context: Context, parameter: String, subject: String,
        build: (AuditLogReader, String, String) async throws -> JSONValue?
    ) async throws -> Response {
        let tenant = try context.requireTenant().id
        _ = try AuditQueryParameters(request, allowed: [])
        let identifier = try Self.identifier(context, parameter)
        guard let timeline = try await build(reader, tenant, identifier) else {
            throw OAuthError.notFound("no audit events for this \(subject)")
        }
        return Self.json(timeline)
    }

    @Sendable func verify(_ request: Request, context: Context) async throws -> Response {
        let tenant = try context.requireTenant().id
        _ = try AuditQueryParameters(request, allowed: [])
        let result = try await ChainVerifier(reader: reader).verify(tenant: tenant)
        return Self.json(result.json)
    }

    /// JSON Lines, one event view per line in chain order, streamed from a server-side cursor.
    @Sendable func export(_ request: Request, context: Context) async throws -> Response {
        let tenant = try context.requireTenant().id
        let parameters = try AuditQueryParameters(request, allowed: ["from", "to"])
        let filter = try AuditEventFilter(parameters)
        let reader = self.reader
        let logger = context.logger
        let body = ResponseBody { writer in
            var buffer = ByteBuffer()
            do {
                try await reader.stream(tenant: tenant, filter: filter) { event in
                    CanonicalJSON.write(event.view, into: &buffer)
                    buffer.writeInteger(UInt8(ascii: "\n"))
                    // Flush in chunks: one write per row would dominate the cost of a large export.
                    if buffer.readableBytes >= 64 * 1024 {
                        try await writer.write(buffer)
                        buffer.clear()
                    }
                }
            } catch {
                // The status line is long gone; ending the stream early tells the client it is incomplete.
                logger.warning("audit export stopped", metadata: ["error": "\(error.logDescription)"])
                throw error
            }
            if buffer.readableBytes > 0 { try await writer.write(buffer) }
            try await writer.finish(nil)
        }
        return Response(
            status: .ok,
            headers: [
                .contentType: "application/x-ndjson",
                .contentDisposition: "attachment; filename=\"audit-\(tenant).jsonl\"",
                .cacheControl: "no-store",
            ],
            body: body)
    }

    /// A path parameter naming a client or user, percent-decoded: non-empty, bounded, printable.
    static func identifier(_ context: Context, _ name: String) throws -> String {
        guard let value = context.parameters.get(name)?.removingPercentEncoding, !value.isEmpty,
            value.utf8.count <= maximumIdentifierLength,
            !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw OAuthError.invalidRequest("\(name) must be 1 to \(maximumIdentifierLength) printable characters")
        }
        return value
    }

    static func json(_ value: JSONValue, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status,
            headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: CanonicalJSON.encode(value))))
    }
}

extension CanonicalJSON {
    /// Writes `value` straight into a NIO buffer (export streaming).
    static func write(_ value: JSONValue, into buffer: inout ByteBuffer) {
        buffer.writeBytes(encode(value))
    }
}
