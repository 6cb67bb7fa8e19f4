import AsyncHTTPClient
import Foundation
import LatchkeyCore
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// HTTP to the token service under test: sign-in once (SSO cookie), codes through the real `/authorize`,
/// and the three grants.
struct TokenServiceClient: Sendable {
    let http: HTTPClient
    let origin: String
    var issuer: String { "\(origin)/t/\(Seeder.tenant)" }
    var tokenURL: String { "\(issuer)/token" }
    var tokenPath: String { "/t/\(Seeder.tenant)/token" }

    struct Answer: Sendable {
        let status: Int
        let headers: [(String, String)]
        let body: Data
        func header(_ name: String) -> [String] { headers.filter { $0.0.lowercased() == name.lowercased() }.map(\.1) }
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body) as? [String: Any]) ?? [:] }
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    func send(_ method: HTTPMethod, _ url: String, headers: [(String, String)] = [], form: [(String, String)]? = nil)
        async throws -> Answer
    {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let form {
            request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
            request.body = .bytes(ByteBuffer(string: Self.encode(form)))
        }
        let response = try await http.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return Answer(
            status: Int(response.status.code), headers: response.headers.map { ($0.name, $0.value) },
            body: Data(buffer: body))
    }

    static func encode(_ pairs: [(String, String)]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return pairs.map {
            "\($0.addingPercentEncoding(withAllowedCharacters: allowed)!)=\($1.addingPercentEncoding(withAllowedCharacters: allowed)!)"
        }
        .joined(separator: "&")
    }

    /// The authorize URL of a PKCE (S256) code request of the native app.
    func authorizeURL(challenge: String) -> String {
        "\(issuer)/authorize?"
            + Self.encode([
                ("response_type", "code"), ("client_id", Seeder.nativeApp), ("redirect_uri", Seeder.redirectURI),
                ("scope", "openid profile"), ("state", SecretTokens.generate()), ("code_challenge", challenge),
                ("code_challenge_method", "S256"),
            ])
    }

    /// Signs in through the pages once; returns the `Cookie` header carrying the SSO session.
    func signIn() async throws -> String {
        let page = try await send(.GET, authorizeURL(challenge: PKCE.s256Challenge(for: PKCE.generateVerifier())))
        guard page.status == 200, let csrf = Self.field("csrf_token", in: page.text),
            let pending = Self.field("authorization_request", in: page.text)
        else {
            throw BenchmarkError("the sign-in page did not render (\(page.status))")
        }
        var cookies = Self.cookies(page)
        let login = try await send(
            .POST, "\(issuer)/login", headers: [("Cookie", Self.cookieHeader(cookies))],
            form: [
                ("csrf_token", csrf), ("authorization_request", pending), ("username", Seeder.username),
                ("password", Seeder.password),
            ])
        guard login.status == 302 else {
            throw BenchmarkError("sign-in failed (\(login.status)): \(login.text.prefix(300))")
        }
        cookies.merge(Self.cookies(login)) { _, new in new }
        return Self.cookieHeader(cookies)
    }

    /// A fresh code for `verifier` through `/authorize` with the SSO session (no prompt).
    func code(cookie: String, verifier: String) async throws -> String {
        let answer = try await send(
            .GET, authorizeURL(challenge: PKCE.s256Challenge(for: verifier)), headers: [("Cookie", cookie)])
        guard answer.status == 302, let location = answer.header("Location").first,
            let code = URLComponents(string: location)?.queryItems?.first(where: { $0.name == "code" })?.value
        else { throw BenchmarkError("authorize did not redirect with a code (\(answer.status))") }
        return code
    }

    /// `authorization_code` + PKCE + DPoP.
    func redeem(code: String, verifier: String, proof: String) async throws -> Answer {
        try await send(
            .POST, tokenURL, headers: [("DPoP", proof)],
            form: [
                ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", Seeder.redirectURI),
                ("client_id", Seeder.nativeApp), ("code_verifier", verifier),
            ])
    }

    /// `client_credentials` with `client_secret_basic`.
    func clientCredentials(authorization: String) async throws -> Answer {
        try await send(
            .POST, tokenURL, headers: [("Authorization", authorization)], form: [("grant_type", "client_credentials")])
    }

    static func field(_ name: String, in html: String) -> String? {
        guard let range = html.range(of: "name=\"\(name)\" value=\"") else { return nil }
        let rest = html[range.upperBound...]
        return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
    }

    static func cookies(_ answer: Answer) -> [String: String] {
        var cookies: [String: String] = [:]
        for line in answer.header("Set-Cookie") {
            let pair = line.split(separator: ";")[0].split(separator: "=", maxSplits: 1).map(String.init)
            if pair.count == 2 { cookies[pair[0]] = pair[1] }
        }
        return cookies
    }

    static func cookieHeader(_ cookies: [String: String]) -> String {
        cookies.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: "; ")
    }
}

struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
