import Foundation
import HTTPTypes
import Hummingbird
import PostgresNIO
import HummingbirdTesting
import Shared
import Testing
@testable import TokenService

/// A response as a test browser sees it.
struct BrowserResponse {
    let status: Int
    let headers: HTTPFields
    let body: String

    var location: String? { headers[.location] }
    func header(_ name: String) -> String? { headers[HTTPField.Name(name)!] }

    /// The value of a hidden form field (`name="…" value="…"`).
    func field(_ name: String) -> String? {
        guard let range = body.range(of: "name=\"\(name)\" value=\"") else { return nil }
        let rest = body[range.upperBound...]
        return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
    }

    /// The query parameters of the redirect `Location`.
    var redirectParameters: [String: String] {
        guard let location, let items = URLComponents(string: location)?.queryItems else { return [:] }
        return Dictionary(items.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
    }

    /// The `Set-Cookie` line for `name`.
    func setCookie(_ name: String) -> String? {
        headers[values: .setCookie].first { $0.hasPrefix("\(name)=") }
    }
}

/// A cookie-keeping client for the sign-in pages: sends back what `Set-Cookie` gave it.
struct BrowserSession {
    let client: any TestClientProtocol
    var cookies: [String: String] = [:]
    /// Sent with every request (e.g. a spoofed `X-Forwarded-For`).
    var extraHeaders: HTTPFields = [:]

    init(_ client: any TestClientProtocol) { self.client = client }

    mutating func get(_ uri: String) async throws -> BrowserResponse {
        try await send(uri, method: .get, body: nil)
    }

    mutating func post(_ uri: String, form: [(String, String)]) async throws -> BrowserResponse {
        try await send(uri, method: .post, body: TokenRequest.form(form))
    }

    mutating func send(_ uri: String, method: HTTPRequest.Method, body: ByteBuffer?, contentType: String? = nil)
        async throws -> BrowserResponse
    {
        var headers = extraHeaders
        if body != nil { headers[.contentType] = contentType ?? "application/x-www-form-urlencoded" }
        if !cookies.isEmpty { headers[.cookie] = cookies.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: "; ") }
        let response = try await client.execute(uri: uri, method: method, headers: headers, body: body) { response in
            BrowserResponse(
                status: Int(response.status.code), headers: response.headers, body: String(buffer: response.body))
        }
        for line in response.headers[values: .setCookie] {
            let pair = line.split(separator: ";")[0].split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                .map(String.init)
            // An empty value (with Max-Age=0) deletes the cookie.
            if pair.count == 2 { cookies[pair[0]] = pair[1].isEmpty ? nil : pair[1] }
        }
        return response
    }
}

/// Builders for authorization requests in tests.
enum AuthorizeRequest {
    static func query(_ pairs: [(String, String)]) -> String {
        String(buffer: TokenRequest.form(pairs))
    }

    /// A PKCE (S256) code request of `clientID`, with optional extra or replaced parameters.
    static func path(
        _ fixture: TokenServiceFixture, clientID: String, redirectURI: String = "com.example.app:/cb",
        verifier: String, state: String = "st-123", extra: [(String, String)] = [], omit: Set<String> = []
    ) -> String {
        var pairs: [(String, String)] = [
            ("response_type", "code"), ("client_id", clientID), ("redirect_uri", redirectURI), ("scope", "openid profile"),
            ("state", state), ("nonce", "n-42"), ("code_challenge", PKCE.s256Challenge(for: verifier)),
            ("code_challenge_method", "S256"),
        ]
        let replaced = Set(extra.map(\.0))
        pairs.removeAll { omit.contains($0.0) || replaced.contains($0.0) }
        pairs.append(contentsOf: extra)
        return "/t/\(fixture.tenant)/authorize?" + query(pairs)
    }
}

extension TokenServiceFixture {
    /// A user with a password, as sign-up would create it.
    @discardableResult
    func insertUser(username: String, password: String) async throws -> UUID {
        let id = try await insertUser(username: username)
        let hash = try settings.passwordHasher.hash(password)
        try await database.withTenantTransaction(tenant) { connection in
            try await connection.query(
                "UPDATE users SET password_hash = \(hash) WHERE user_id = \(id)", logger: database.logger)
        }
        return id
    }

    /// A public native client for the code flow (as DCR would register it).
    func insertPublicApp(_ id: String = "app", redirectURIs: [String] = ["com.example.app:/cb"]) async throws -> NativeApp {
        try await insertClient(
            id, authMethod: .noAuthentication, grantTypes: [.authorizationCode, .refreshToken], redirectURIs: redirectURIs,
            dpopBound: true)
        return try NativeApp(clientID: id)
    }

    /// Counts rows of a tenant table matching a SQL condition on one text column.
    func count(_ sql: String) async throws -> Int {
        try await database.withTenantTransaction(tenant) { connection in
            let rows = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: database.logger)
            for try await value in rows.decode(Int.self) { return value }
            return 0
        }
    }
}
