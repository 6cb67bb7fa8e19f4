import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore

/// A response as a test browser (``PageBrowser``) sees it.
public struct PageResponse: Sendable {
    public let status: Int
    public let headers: HTTPFields
    public let body: String

    public var location: String? { headers[.location] }
    public func header(_ name: String) -> String? { headers[HTTPField.Name(name)!] }

    /// The value of a hidden form field (`name="…" value="…"`).
    public func field(_ name: String) -> String? {
        guard let range = body.range(of: "name=\"\(name)\" value=\"") else { return nil }
        let rest = body[range.upperBound...]
        return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
    }

    /// The query parameters of the redirect `Location`.
    public var redirectParameters: [String: String] {
        guard let location, let items = URLComponents(string: location)?.queryItems else { return [:] }
        return Dictionary(items.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
    }

    /// The `Set-Cookie` line for `name`.
    public func setCookie(_ name: String) -> String? {
        headers[values: .setCookie].first { $0.hasPrefix("\(name)=") }
    }
}

/// A cookie-keeping client for server-rendered pages over the router test client: sends back what
/// `Set-Cookie` gave it.
public struct PageBrowser {
    public let client: any TestClientProtocol
    public var cookies: [String: String] = [:]
    /// Sent with every request (e.g. a spoofed `X-Forwarded-For`).
    public var extraHeaders: HTTPFields = [:]

    public init(_ client: any TestClientProtocol) { self.client = client }

    public mutating func get(_ uri: String) async throws -> PageResponse {
        try await send(uri, method: .get, body: nil)
    }

    public mutating func post(_ uri: String, form: [(String, String)]) async throws -> PageResponse {
        try await send(uri, method: .post, body: ByteBuffer(string: Self.form(form)))
    }

    public mutating func send(_ uri: String, method: HTTPRequest.Method, body: ByteBuffer?, contentType: String? = nil)
        async throws -> PageResponse
    {
        var headers = extraHeaders
        if body != nil { headers[.contentType] = contentType ?? "application/x-www-form-urlencoded" }
        if !cookies.isEmpty {
            headers[.cookie] = cookies.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: "; ")
        }
        let response = try await client.execute(uri: uri, method: method, headers: headers, body: body) { response in
            PageResponse(
                status: Int(response.status.code), headers: response.headers, body: String(buffer: response.body))
        }
        for line in response.headers[values: .setCookie] {
            let pair = line.split(separator: ";")[0].split(
                separator: "=", maxSplits: 1, omittingEmptySubsequences: false
            )
            .map(String.init)
            // An empty value (with Max-Age=0) deletes the cookie.
            if pair.count == 2 { cookies[pair[0]] = pair[1].isEmpty ? nil : pair[1] }
        }
        return response
    }
}

extension PageBrowser {
    /// `application/x-www-form-urlencoded` of `pairs` (unreserved characters kept, everything else escaped).
    public static func form(_ pairs: [(String, String)]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return pairs.map { name, value in
            "\(name.addingPercentEncoding(withAllowedCharacters: allowed)!)=\(value.addingPercentEncoding(withAllowedCharacters: allowed)!)"
        }.joined(separator: "&")
    }
}
