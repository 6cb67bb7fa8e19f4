import AsyncHTTPClient
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import NIOCore
import Testing

@testable import RegistrationGateway

// Serialized: every test runs a gateway app with its own connection pools, and the test cluster is shared.
@Suite(.serialized) struct SoftwareStatementTests {
    static var claims: [String: Any] {
        [
            "software_id": "statement-app", "software_version": "2.1", "client_name": "Signed App",
            "redirect_uris": ["com.example.signed:/cb"], "token_endpoint_auth_method": "none", "scope": "openid",
        ]
    }

    /// A registration body sending `statement` next to members the statement also sets.
    static func body(_ statement: String, extra: String = "") -> String {
        #"{"software_statement":"\#(statement)","client_name":"From Body","redirect_uris":["com.example.body:/cb"],"contacts":["ops@example.com"]\#(extra)}"#
    }

    @Test(arguments: [JWSAlgorithm.es256, .rs256, .edDSA])
    func statementClaimsWinOverTheBodyAndTheStatementIsEchoed(algorithm: JWSAlgorithm) async throws {
        let issuer = try SoftwareStatementIssuer(algorithm)
        let h = try await GatewayHarness.make(policy: SoftwareStatementIssuer.policy(trusting: [issuer.trustEntry()]))
        let iat = try await h.createInitialAccessToken()
        let statement = try issuer.statement(Self.claims)
        try await GatewayHarness.withApp { client in
            let response = try await client.send(
                .post, "/t/\(h.tenant)/register", token: iat, json: Self.body(statement))
            #expect(response.status == .created, "\(String(buffer: response.body))")
            let body = response.json
            #expect(body["client_name"] as? String == "Signed App")
            #expect(body["redirect_uris"] as? [String] == ["com.example.signed:/cb"])
            #expect(body["software_id"] as? String == "statement-app")
            #expect(body["software_version"] as? String == "2.1")
            #expect(body["token_endpoint_auth_method"] as? String == "none")
            #expect(body["client_secret"] == nil)
            // A member only the body sets stays; the statement is echoed as sent (RFC 7591 §3.2.1).
            #expect(body["contacts"] as? [String] == ["ops@example.com"])
            #expect(body["software_statement"] as? String == statement)
            #expect(body["iss"] == nil)
        }
        let events = try await h.outboxPayloads(.clientRegistered)
        #expect(events.count == 1)
        let event = try #require(events.first)
        #expect(!event.contains(statement) && !event.contains(iat))
        #expect(
            try EventSchemaValidator().firstError(
                in: LatchkeyJSON.decode(JSONValue.self, from: Data(event.utf8)),
                as: .clientRegistered) == nil)
    }

    @Test func forgedExpiredAndMalformedStatementsAreInvalid() async throws {
        let issuer = try SoftwareStatementIssuer()
        let h = try await GatewayHarness.make(policy: SoftwareStatementIssuer.policy(trusting: [issuer.trustEntry()]))
        let iat = try await h.createInitialAccessToken(uses: 50)
        let now = Int(Date().timeIntervalSince1970)
        let claims = Self.claims.merging(["iss": issuer.issuer]) { $1 }
        func kidHeader(_ alg: String) -> String { #"{"alg":"\#(alg)","typ":"JWT","kid":"\#(issuer.kid)"}"# }
        let hmac = Data(
            HMAC<SHA256>.authenticationCode(for: Data("x".utf8), using: SymmetricKey(data: Data(issuer.jwks.utf8))))
        let es384 = try SigningKey.generate(.es384)
        let statements: [(String, String)] = [
            ("another key's signature", try issuer.statement(Self.claims, signer: SigningKey.generate(.es256))),
            ("expired", try issuer.statement(Self.claims.merging(["exp": now - 120]) { $1 })),
            ("not valid yet", try issuer.statement(Self.claims.merging(["nbf": now + 600]) { $1 })),
            ("issued in the future", try issuer.statement(Self.claims.merging(["iat": now + 600]) { $1 })),
            ("alg none", try SoftwareStatementIssuer.unsigned(header: #"{"alg":"none","typ":"JWT"}"#, payload: claims)),
            ("alg None", try SoftwareStatementIssuer.unsigned(header: kidHeader("None"), payload: claims)),
            (
                "HS256 keyed with the public JWKS",
                try SoftwareStatementIssuer.unsigned(
                    header: kidHeader("HS256"), payload: claims, signature: hmac)
            ),
            (
                "ES384 under the ES256 key's kid",
                try issuer.statement(
                    Self.claims, header: JWSHeaderParameters(typ: "JWT", kid: issuer.kid), signer: es384)
            ),
            ("unknown kid", try issuer.statement(Self.claims, header: JWSHeaderParameters(typ: "JWT", kid: "other"))),
            (
                "access token typ",
                try issuer.statement(Self.claims, header: JWSHeaderParameters(typ: "at+jwt", kid: issuer.kid))
            ),
            ("no iss", try SoftwareStatementIssuer.unsigned(header: kidHeader("ES256"), payload: Self.claims)),
            ("mistyped exp", try issuer.statement(Self.claims.merging(["exp": "tomorrow"]) { $1 })),
            (
                "mistyped metadata claim",
                try issuer.statement(Self.claims.merging(["redirect_uris": "com.example.signed:/cb"]) { $1 })
            ),
            ("two segments", "eyJhbGciOiJFUzI1NiJ9.e30"),
            ("four segments", "a.b.c.d"),
            ("not base64url", "***.***.***"),
            (
                "payload not JSON",
                Base64URL.encode(Data(#"{"alg":"ES256"}"#.utf8)) + "." + Base64URL.encode(Data("hello".utf8)) + ".AA"
            ),
            ("oversized", String(repeating: "a", count: 20_000) + ".b.c"),
        ]
        try await GatewayHarness.withApp { client in
            for (name, statement) in statements {
                let response = try await client.send(
                    .post, "/t/\(h.tenant)/register", token: iat, json: Self.body(statement))
                #expect(response.status == .badRequest, "\(name): \(String(buffer: response.body))")
                #expect(response.errorCode == "invalid_software_statement", "\(name)")
            }
            // A statement that is not a string is malformed metadata.
            let number = try await client.send(
                .post, "/t/\(h.tenant)/register", token: iat, json: #"{"software_statement":42}"#)
            #expect(number.status == .badRequest)
            #expect(number.errorCode == "invalid_client_metadata")
        }
        #expect(try await h.outboxPayloads(.clientRegistered).isEmpty)
    }

    @Test func issuersTheTenantDoesNotTrustAreUnapproved() async throws {
        let trusted = try SoftwareStatementIssuer()
        let elsewhere = try SoftwareStatementIssuer()
        let h = try await GatewayHarness.make(policy: SoftwareStatementIssuer.policy(trusting: [trusted.trustEntry()]))
        // Another tenant trusts `elsewhere`; that trust does not carry over.
        _ = try await GatewayHarness.make(policy: SoftwareStatementIssuer.policy(trusting: [elsewhere.trustEntry()]))
        let iat = try await h.createInitialAccessToken(uses: 5)
        let impostor = try SoftwareStatementIssuer(issuer: trusted.issuer + "/other")
        try await GatewayHarness.withApp { client in
            for statement in [try elsewhere.statement(Self.claims), try impostor.statement(Self.claims)] {
                let response = try await client.send(
                    .post, "/t/\(h.tenant)/register", token: iat, json: Self.body(statement))
                #expect(response.status == .badRequest)
                #expect(response.errorCode == "unapproved_software_statement")
            }
        }
    }

    @Test func statementMetadataIsValidatedLikeTheBody() async throws {
        let issuer = try SoftwareStatementIssuer()
        let h = try await GatewayHarness.make(policy: SoftwareStatementIssuer.policy(trusting: [issuer.trustEntry()]))
        let iat = try await h.createInitialAccessToken(uses: 5)
        let cases: [([String: Any], String)] = [
            (["redirect_uris": ["http://app.example.com/cb"]], "invalid_redirect_uri"),
            (["redirect_uris": ["http://localhost/cb"]], "invalid_redirect_uri"),
            (["grant_types": ["implicit"], "response_types": ["token"]], "invalid_client_metadata"),
            (["scope": "openid admin"], "invalid_client_metadata"),
        ]
        let statements = try cases.map { (try issuer.statement(Self.claims.merging($0.0) { $1 }), $0.1, "\($0.0)") }
        try await GatewayHarness.withApp { client in
            for (statement, error, claims) in statements {
                // The body itself is valid: the refusal comes from the statement's members.
                let response = try await client.send(
                    .post, "/t/\(h.tenant)/register", token: iat, json: Self.body(statement))
                #expect(response.status == .badRequest, "\(claims)")
                #expect(response.errorCode == error, "\(claims)")
            }
        }
    }

    @Test func statementsWorkWithTemplatesAndOnRFC7592Update() async throws {
        let issuer = try SoftwareStatementIssuer()
        let h = try await GatewayHarness.make(policy: SoftwareStatementIssuer.policy(trusting: [issuer.trustEntry()]))
        try await h.createTemplate(
            "signed-template",
            metadata:
                #"{"redirect_uris":["com.example.template:/cb"],"token_endpoint_auth_method":"none","client_name":"Template"}"#,
            overridable: ["client_name"])
        let iat = try await h.createInitialAccessToken(uses: 5)
        try await GatewayHarness.withApp { client in
            // The statement names the template and sets an overridable member.
            let viaTemplate = try issuer.statement(["software_id": "signed-template", "client_name": "Signed instance"])
            let registered = try await client.send(
                .post, "/t/\(h.tenant)/register", token: iat, json: #"{"software_statement":"\#(viaTemplate)"}"#)
            #expect(registered.status == .created, "\(String(buffer: registered.body))")
            #expect(registered.json["client_name"] as? String == "Signed instance")
            #expect(registered.json["redirect_uris"] as? [String] == ["com.example.template:/cb"])
            // A statement setting a member the template does not let instances set is refused.
            let forbidden = try issuer.statement([
                "software_id": "signed-template", "redirect_uris": ["com.example.evil:/cb"],
            ])
            let refused = try await client.send(
                .post, "/t/\(h.tenant)/register", token: iat, json: #"{"software_statement":"\#(forbidden)"}"#)
            #expect(refused.errorCode == "invalid_client_metadata")

            let plain = try await client.send(
                .post, "/t/\(h.tenant)/register", token: iat, json: Self.body(try issuer.statement(Self.claims)))
            let clientID = try #require(plain.json["client_id"] as? String)
            let rat = try #require(plain.json["registration_access_token"] as? String)
            let renamed = try issuer.statement(Self.claims.merging(["client_name": "Signed App v2"]) { $1 })
            let put = try await client.send(
                .put, "/t/\(h.tenant)/register/\(clientID)", token: rat,
                json: Self.body(renamed, extra: #","client_id":"\#(clientID)""#))
            #expect(put.status == .ok, "\(String(buffer: put.body))")
            #expect(put.json["client_name"] as? String == "Signed App v2")
            #expect(put.json["software_statement"] as? String == renamed)
            let newRAT = try #require(put.json["registration_access_token"] as? String)
            let forged = try issuer.statement(Self.claims, signer: SigningKey.generate(.es256))
            let badPut = try await client.send(
                .put, "/t/\(h.tenant)/register/\(clientID)", token: newRAT,
                json: Self.body(forged, extra: #","client_id":"\#(clientID)""#))
            #expect(badPut.errorCode == "invalid_software_statement")
            let read = try await client.send(.get, "/t/\(h.tenant)/register/\(clientID)", token: newRAT)
            #expect(read.json["client_name"] as? String == "Signed App v2")
        }
        let updates = try await h.outboxPayloads(.clientUpdated)
        #expect(updates.count == 1)
    }

    @Test func jwksURIKeysAreFetchedOnceAndUnreachableKeysAre503() async throws {
        let issuer = try SoftwareStatementIssuer()
        let down = try SoftwareStatementIssuer()
        let fetches = FetchCounter()
        let router = Router()
        let jwks = issuer.jwks
        router.get("jwks") { _, _ -> Response in
            await fetches.increment()
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: jwks)))
        }
        router.get("broken") { _, _ in Response(status: .internalServerError) }
        let h = try await GatewayHarness.make(
            policy: SoftwareStatementIssuer.policy(trusting: [
                issuer.trustEntry(jwksURI: "https://keys.example/jwks"),
                down.trustEntry(jwksURI: "https://keys.example/broken"),
            ]))
        let iat = try await h.createInitialAccessToken(uses: 5)
        try await withLoopbackServer(router) { port in
            try await Self.withFetcher { fetcher in
                // The policy only accepts https URLs; the test issuer answers on loopback http.
                let fetch: JWKSCache.Fetch = { uri in
                    try await fetcher.fetch(
                        uri.replacingOccurrences(of: "https://keys.example", with: "http://127.0.0.1:\(port)"))
                }
                try await GatewayHarness.withApp(fetchStatementJWKS: fetch) { client in
                    for _ in 0..<2 {
                        let response = try await client.send(
                            .post, "/t/\(h.tenant)/register", token: iat,
                            json: Self.body(try issuer.statement(Self.claims)))
                        #expect(response.status == .created, "\(String(buffer: response.body))")
                    }
                    let unavailable = try await client.send(
                        .post, "/t/\(h.tenant)/register", token: iat, json: Self.body(try down.statement(Self.claims)))
                    #expect(unavailable.status == .serviceUnavailable)
                    #expect(unavailable.errorCode == "temporarily_unavailable")
                    #expect(unavailable.headers[.retryAfter] != nil)
                }
            }
        }
        #expect(await fetches.count == 1)
    }

    @Test func theFetcherRefusesOversizedAndNonJWKSDocuments() async throws {
        let router = Router()
        router.get("huge") { _, _ in
            Response(
                status: .ok,
                body: .init(
                    byteBuffer: ByteBuffer(
                        string: #"{"keys":[],"pad":""# + String(repeating: "x", count: 100_000) + #""}"#)))
        }
        router.get("html") { _, _ in Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "<html></html>")))
        }
        router.get("redirect") { _, _ in Response(status: .found, headers: [.location: "/html"]) }
        try await withLoopbackServer(router) { port in
            try await Self.withFetcher { fetcher in
                for path in ["huge", "html", "redirect", "missing"] {
                    await #expect(throws: (any Error).self, "\(path)") {
                        try await fetcher.fetch("http://127.0.0.1:\(port)/\(path)")
                    }
                }
                // Production settings: plain http and loopback addresses are refused before any connection.
                let production = JWKSDocumentFetcher(policy: .publicHTTPSOnly)
                for url in [
                    "http://127.0.0.1:\(port)/html", "https://127.0.0.1:\(port)/html", "https://localhost:\(port)/html",
                    "https://169.254.169.254/latest/meta-data", "https://[::1]:\(port)/html", "ftp://example.com/jwks",
                ] {
                    await #expect(throws: GuardedHTTPClient.Failure.self, "\(url)") { try await production.fetch(url) }
                }
            }
        }
    }

    /// Runs `body` with the gateway's fetcher, allowed to reach the test issuer on loopback http.
    static func withFetcher(_ body: (JWKSDocumentFetcher) async throws -> Void) async throws {
        try await body(JWKSDocumentFetcher(policy: OutboundPolicy(allowLoopbackHTTP: true)))
    }
}

/// Counts requests a test server answered.
actor FetchCounter {
    private(set) var count = 0
    func increment() { count += 1 }
}
