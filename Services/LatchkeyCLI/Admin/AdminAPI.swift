import Foundation
import LatchkeyCore

/// The admin API refused a request, or could not be reached: its status and its RFC-style
/// `error`/`error_description`, which the CLI prints and exits non-zero with.
struct AdminAPIError: Error, CustomStringConvertible {
    var status: Int?
    var description: String
}

/// The registration gateway's admin API over the CLI's one HTTP client (``DemoHTTP``, async-http-client):
/// JSON in and out, the credential's bearer token on every request.
final class AdminAPI: Sendable {
    let baseURL: String
    private let http: DemoHTTP
    private let credential: AdminCredential
    private let token: TokenBox

    /// Holds the access token once fetched, so one command makes one token request.
    private actor TokenBox {
        var value: String?
        func get(_ fetch: @Sendable () async throws -> String) async throws -> String {
            if let value { return value }
            let fetched = try await fetch()
            value = fetched
            return fetched
        }
    }

    init(url: String, credential: AdminCredential) {
        baseURL = url
        http = DemoHTTP()
        self.credential = credential
        token = TokenBox()
    }

    convenience init(options: AdminOptions) throws {
        let (url, credential) = try options.resolve()
        self.init(url: url, credential: credential)
    }

    func shutdown() async { try? await http.shutdown() }

    /// Runs `body` and shuts the HTTP client down whatever happens.
    static func with<T>(_ options: AdminOptions, _ body: (AdminAPI) async throws -> T) async throws -> T {
        let api = try AdminAPI(options: options)
        do {
            let result = try await body(api)
            await api.shutdown()
            return result
        } catch {
            await api.shutdown()
            throw error
        }
    }

    var usesBootstrapKey: Bool {
        if case .bootstrapKey = credential { return true }
        return false
    }

    func get(_ path: String) async throws -> JSONValue {
        try await send("GET", path, body: nil, expecting: [200])
    }

    /// `GET`, nil on 404 (an unknown tenant or client).
    func find(_ path: String) async throws -> JSONValue? {
        do { return try await get(path) } catch let error as AdminAPIError where error.status == 404 { return nil }
    }

    func post(_ path: String, _ body: JSONValue, expecting statuses: Set<Int> = [200, 201]) async throws -> JSONValue {
        try await send("POST", path, body: body, expecting: statuses)
    }

    func put(_ path: String, _ body: JSONValue) async throws -> JSONValue {
        try await send("PUT", path, body: body, expecting: [200, 201])
    }

    /// A path segment, percent-encoded (tenant ids and client ids are plain, but a typo must not change the path).
    static func segment(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }

    private func send(_ method: String, _ path: String, body: JSONValue?, expecting statuses: Set<Int>) async throws
        -> JSONValue
    {
        let bearer = try await accessToken()
        var headers = [("Authorization", "Bearer \(bearer)"), ("Accept", "application/json")]
        if body != nil { headers.append(("Content-Type", "application/json")) }
        let response: DemoResponse
        do {
            response = try await http.send(
                method, baseURL + path, headers: headers,
                body: body.map { String(decoding: CanonicalJSON.encode($0), as: UTF8.self) })
        } catch {
            throw AdminAPIError(status: nil, description: "\(method) \(baseURL)\(path): \(error)")
        }
        let json = try? StrictJSONParser.parse(Array(response.body.utf8))
        guard statuses.contains(response.status) else {
            throw AdminAPIError(status: response.status, description: Self.problem(method, path, response, json))
        }
        guard let json else {
            throw AdminAPIError(
                status: response.status, description: "\(method) \(path): the answer is not JSON")
        }
        return json
    }

    private static func problem(_ method: String, _ path: String, _ response: DemoResponse, _ json: JSONValue?)
        -> String
    {
        let detail: String
        if let error = json?["error"]?.stringValue {
            detail = error + (json?["error_description"]?.stringValue.map { ": \($0)" } ?? "")
        } else {
            detail = String(response.body.prefix(300))
        }
        return "\(method) \(path) → \(response.status) \(detail)"
    }

    private func accessToken() async throws -> String {
        switch credential {
        case .token(let value): return value
        case .bootstrapKey(let key): return key
        case .client(let issuer, let clientID, let secret):
            let http = self.http
            return try await token.get {
                try await Self.clientCredentialsToken(http, issuer: issuer, clientID: clientID, secret: secret)
            }
        }
    }

    /// RFC 6749 §4.4 at the token endpoint the issuer's discovery document names.
    private static func clientCredentialsToken(_ http: DemoHTTP, issuer: String, clientID: String, secret: String)
        async throws -> String
    {
        let discovery = try await http.get("\(issuer)/.well-known/openid-configuration")
        guard discovery.status == 200,
            let document = try? StrictJSONParser.parse(Array(discovery.body.utf8)),
            let endpoint = document["token_endpoint"]?.stringValue
        else {
            throw AdminAPIError(
                status: discovery.status,
                description: "LATCHKEY_ADMIN_ISSUER \(issuer): no OpenID configuration (\(discovery.status))")
        }
        // RFC 6749 §2.3.1: the id and secret are form-encoded before Basic encoding.
        let basic = Data("\(DemoHTTP.formEncoded(clientID)):\(DemoHTTP.formEncoded(secret))".utf8)
            .base64EncodedString()
        let response = try await http.postForm(
            endpoint, [("grant_type", "client_credentials"), ("scope", "admin")],
            headers: [("Authorization", "Basic \(basic)")])
        let json = try? StrictJSONParser.parse(Array(response.body.utf8))
        guard response.status == 200, let token = json?["access_token"]?.stringValue else {
            let error = json?["error"]?.stringValue ?? "HTTP \(response.status)"
            let description = json?["error_description"]?.stringValue.map { ": \($0)" } ?? ""
            throw AdminAPIError(status: response.status, description: "admin token refused: \(error)\(description)")
        }
        return token
    }
}
