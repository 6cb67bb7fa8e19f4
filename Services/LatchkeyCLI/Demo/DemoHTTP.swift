import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// What the demo sees of one HTTP exchange.
struct DemoResponse: Sendable {
    let status: Int
    let headers: HTTPHeaders
    let body: String

    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]) ?? [:] }
    var location: String? { headers.first(name: "Location") }

    /// The value of a hidden form field of an HTML page (`name="…" value="…"`).
    func field(_ name: String) -> String? {
        guard let range = body.range(of: "name=\"\(name)\" value=\"") else { return nil }
        let rest = body[range.upperBound...]
        return rest.firstIndex(of: "\"").map { String(rest[..<$0]).replacingOccurrences(of: "&amp;", with: "&") }
    }

    /// Query parameters of the redirect target.
    var redirectParameters: [String: String] {
        guard let location, let items = URLComponents(string: location)?.queryItems else { return [:] }
        return Dictionary(items.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
    }
}

/// A small HTTP client for the demo and the end-to-end test: keeps cookies like a browser (per host),
/// never follows redirects (the app's redirect URI is a custom scheme), and logs a one-line summary.
final class DemoHTTP: @unchecked Sendable {
    private let client: HTTPClient
    private var cookies: [String: [String: String]] = [:]
    private let lock = NSLock()
    /// Called with a one-line summary of each exchange (tokens truncated), if set.
    var trace: (@Sendable (String) -> Void)?

    init() {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        configuration.timeout = .init(connect: .seconds(5), read: .seconds(30))
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    func shutdown() async throws { try await client.shutdown() }

    func get(_ url: String, headers: [(String, String)] = []) async throws -> DemoResponse {
        try await send("GET", url, headers: headers)
    }

    func postForm(_ url: String, _ form: [(String, String)], headers: [(String, String)] = []) async throws
        -> DemoResponse
    {
        try await send(
            "POST", url, headers: headers + [("Content-Type", "application/x-www-form-urlencoded")],
            body: Self.form(form))
    }

    func postJSON(_ url: String, _ json: String, headers: [(String, String)] = []) async throws -> DemoResponse {
        try await send("POST", url, headers: headers + [("Content-Type", "application/json")], body: json)
    }

    func send(_ method: String, _ url: String, headers: [(String, String)] = [], body: String? = nil) async throws
        -> DemoResponse
    {
        var request = HTTPClientRequest(url: url)
        request.method = HTTPMethod(rawValue: method)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let host = URLComponents(string: url)?.host ?? ""
        let jar = lock.withLock { cookies[host] ?? [:] }
        if !jar.isEmpty {
            request.headers.add(
                name: "Cookie", value: jar.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: "; "))
        }
        if let body { request.body = .bytes(ByteBuffer(string: body)) }
        let response = try await client.execute(request, timeout: .seconds(30))
        let text = String(buffer: try await response.body.collect(upTo: 4 * 1024 * 1024))
        lock.withLock {
            for line in response.headers["Set-Cookie"] {
                let pair = line.split(separator: ";")[0].split(separator: "=", maxSplits: 1).map(String.init)
                if pair.count == 2 { cookies[host, default: [:]][pair[0]] = pair[1] }
            }
        }
        let result = DemoResponse(status: Int(response.status.code), headers: response.headers, body: text)
        trace?("\(method) \(Self.redacted(url)) → \(result.status)")
        return result
    }

    static func form(_ pairs: [(String, String)]) -> String {
        pairs.map { "\($0.0)=\(formEncoded($0.1))" }.joined(separator: "&")
    }

    /// `application/x-www-form-urlencoded` encoding of one value.
    static func formEncoded(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    /// A URL with long query values (codes, tokens) shortened for display.
    static func redacted(_ url: String) -> String {
        guard let mark = url.firstIndex(of: "?"), let items = URLComponents(string: url)?.queryItems else { return url }
        return String(url[..<mark]) + "?"
            + items.map { "\($0.name)=\(truncated($0.value ?? ""))" }.joined(separator: "&")
    }

    /// The first characters of a credential, for printing.
    static func truncated(_ value: String) -> String { value.count > 16 ? String(value.prefix(10)) + "…" : value }
}
