import Foundation
import LatchkeyCore
import NIOHTTP1

/// The mobile story (an app instance registers itself and gets DPoP-bound tokens), played by a client that does PKCE and DPoP itself: sign up, get a DCR
/// token, register the app instance (full metadata and via the template), sign in again without a prompt,
/// call the API through the sidecar with DPoP-bound tokens, refresh, then an administrator revokes the
/// instance and the audit log shows what happened.
struct MobileStory {
    /// What the story produced, for callers that check more (the end-to-end test).
    struct Outcome: Sendable {
        var userID: String
        var username: String
        var instanceID: String
        var templateInstanceID: String
        var refreshToken: String
        var accessToken: String
        var secondsUntilRefused: Double
    }

    let http: DemoHTTP
    let endpoints: DemoEndpoints
    let credentials: DemoCredentials
    /// Prints a step heading and details; the CLI prints, the test stays quiet.
    var say: @Sendable (String) -> Void = { _ in }

    func run() async throws -> Outcome {
        let username = "user-" + UUID().uuidString.lowercased().prefix(8)
        let password = "pass " + UUID().uuidString.lowercased()

        say("1. Sign up \(username) on the sign-up page and 2. get a DCR token (authorization code + PKCE, scope dcr)")
        let verifier = PKCE.generateVerifier()
        let signIn = try expect(
            try await http.get(
                authorizeURL(
                    clientID: credentials.dcrClientID, scope: "dcr", verifier: verifier, state: "dcr-1")), 200,
            "authorize (sign-in page)")
        guard let link = signIn.body.range(of: "href=\"/t/\(endpoints.tenant)/signup?") else {
            throw DemoFailure("the sign-in page has no sign-up link")
        }
        let href = String(signIn.body[link.lowerBound...].dropFirst(6).prefix { $0 != "\"" }).replacingOccurrences(
            of: "&amp;", with: "&")
        let signUpPage = try expect(try await http.get(endpoints.tokenService + href), 200, "sign-up page")
        let signedUp = try expect(
            try await http.postForm(
                "\(endpoints.issuer)/signup",
                [
                    ("csrf_token", try required(signUpPage.field("csrf_token"), "csrf_token")),
                    (
                        "authorization_request",
                        try required(signUpPage.field("authorization_request"), "authorization_request")
                    ),
                    ("username", username), ("email", "\(username)@example.com"), ("password", password),
                ]), 302, "sign up")
        let dcrCode = try code(from: signedUp, state: "dcr-1")
        let dcrTokens = try expect(
            try await http.postForm(
                endpoints.tokenEndpoint,
                [
                    ("grant_type", "authorization_code"), ("code", dcrCode),
                    ("redirect_uri", DemoSeeder.dcrRedirectURI),
                    ("client_id", credentials.dcrClientID), ("code_verifier", verifier),
                ]), 200, "DCR token")
        let dcrToken = try required(dcrTokens.json["access_token"] as? String, "access_token")
        say("   DCR token \(DemoHTTP.truncated(dcrToken)) (scope \(dcrTokens.json["scope"] as? String ?? "?"))")

        say("3. Register the app instance with the DCR token: full metadata, then via the demo-mobile template")
        let registration = try expect(
            try await http.postJSON(
                "\(endpoints.gateway)/t/\(endpoints.tenant)/register",
                #"{"client_name":"\#(username)'s phone","redirect_uris":["\#(DemoSeeder.dcrRedirectURI)"],"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],"scope":"\#(DemoSeeder.instanceScope)","dpop_bound_access_tokens":true}"#,
                headers: [("Authorization", "Bearer \(dcrToken)")]), 201, "register the instance")
        let instanceID = try required(registration.json["client_id"] as? String, "client_id")
        let registrationToken = try required(
            registration.json["registration_access_token"] as? String, "registration_access_token")
        let viaTemplate = try expect(
            try await http.postJSON(
                "\(endpoints.gateway)/t/\(endpoints.tenant)/register",
                #"{"software_id":"\#(credentials.templateID)","client_name":"\#(username)'s tablet"}"#,
                headers: [("Authorization", "Bearer \(dcrToken)")]), 201, "register via the template")
        let templateInstanceID = try required(viaTemplate.json["client_id"] as? String, "client_id")
        say("   instance \(instanceID), template instance \(templateInstanceID)")

        say("4. Sign in as the instance: SSO (no prompt), PKCE, DPoP-bound tokens")
        let dpop = DPoPProofSigner(key: try SigningKey.generate(.es256))
        let instanceVerifier = PKCE.generateVerifier()
        let ssoRedirect = try expect(
            try await http.get(
                authorizeURL(
                    clientID: instanceID, scope: DemoSeeder.instanceScope, verifier: instanceVerifier, state: "inst-1",
                    extra: [("dpop_jkt", dpop.jkt)])), 302, "authorize with the SSO session (no prompt)")
        let instanceCode = try code(from: ssoRedirect, state: "inst-1")
        let tokens = try await dpopTokenRequest(
            dpop,
            [
                ("grant_type", "authorization_code"), ("code", instanceCode),
                ("redirect_uri", DemoSeeder.dcrRedirectURI),
                ("client_id", instanceID), ("code_verifier", instanceVerifier),
            ])
        guard tokens.json["token_type"] as? String == "DPoP" else {
            throw DemoFailure("token_type is not DPoP: \(tokens.body)")
        }
        var accessToken = try required(tokens.json["access_token"] as? String, "access_token")
        var refreshToken = try required(tokens.json["refresh_token"] as? String, "refresh_token")
        say("   access \(DemoHTTP.truncated(accessToken)), refresh \(DemoHTTP.truncated(refreshToken))")

        say("5. Call the demo API through dpop-verifier (GET and POST), refresh, call again")
        let listed = try expect(try await api(dpop, "GET", "/v1/orders", token: accessToken), 200, "GET /v1/orders")
        guard listed.json["client-id"] as? String == instanceID, listed.json["jkt"] as? String == dpop.jkt else {
            throw DemoFailure("the API saw another identity: \(listed.body)")
        }
        try expect(
            try await api(dpop, "POST", "/v1/orders", token: accessToken, body: #"{"item":"coffee"}"#), 200,
            "POST /v1/orders")
        let refreshed = try await dpopTokenRequest(
            dpop,
            [
                ("grant_type", "refresh_token"), ("refresh_token", refreshToken), ("client_id", instanceID),
            ])
        accessToken = try required(refreshed.json["access_token"] as? String, "access_token")
        refreshToken = try required(refreshed.json["refresh_token"] as? String, "refresh_token")
        try expect(try await api(dpop, "GET", "/v1/orders", token: accessToken), 200, "GET /v1/orders after refresh")

        say("6. The administrator revokes the instance (\"device stolen\")")
        let adminToken = try await DemoSeeder.adminToken(
            http, endpoints, clientID: credentials.adminClientID, secret: credentials.adminClientSecret)
        try expect(
            try await http.postJSON(
                "\(endpoints.gateway)/admin/tenants/\(endpoints.tenant)/clients/\(instanceID)/revoke",
                #"{"reason":"device stolen"}"#,
                headers: [("Authorization", "Bearer \(adminToken)")]), 200, "revoke")
        let revokedAt = ContinuousClock.now
        let refreshAfter = try await dpopTokenRequest(
            dpop,
            [
                ("grant_type", "refresh_token"), ("refresh_token", refreshToken), ("client_id", instanceID),
            ], expecting: nil)
        guard refreshAfter.status == 400 || refreshAfter.status == 401 else {
            throw DemoFailure("refresh after revocation answered \(refreshAfter.status) \(refreshAfter.body)")
        }
        say("   refresh → \(refreshAfter.status) \(refreshAfter.json["error"] as? String ?? "")")
        var refusedAfter: Double?
        while ContinuousClock.now - revokedAt < .seconds(5) {
            if try await api(dpop, "GET", "/v1/orders", token: accessToken).status == 401 {
                refusedAfter =
                    Double((ContinuousClock.now - revokedAt).components.attoseconds) / 1e18
                    + Double((ContinuousClock.now - revokedAt).components.seconds)
                break
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        guard let refusedAfter else {
            throw DemoFailure("the API still accepted the revoked instance's token after 5 s")
        }
        say(String(format: "   API call refused %.2f s after the revocation", refusedAfter))
        try expect(
            try await http.get(
                "\(endpoints.gateway)/t/\(endpoints.tenant)/register/\(instanceID)",
                headers: [("Authorization", "Bearer \(registrationToken)")]), 401, "RFC 7592 read after revocation")

        say("7. The audit log: the instance's timeline and the hash chain")
        let timeline = try await auditTimeline(instanceID, adminToken: adminToken)
        say(
            "   timeline: status \(timeline.json["status"] as? String ?? "?"), revocation reason \"device stolen\" recorded"
        )
        let verified = try expect(
            try await http.get(
                "\(endpoints.audit)/audit/t/\(endpoints.tenant)/verify",
                headers: [("Authorization", "Bearer \(adminToken)")]), 200, "verify")
        guard verified.json["status"] as? String == "ok" else {
            throw DemoFailure("chain verification: \(verified.body)")
        }
        say(
            "   chain ok: \(verified.json["count"] ?? "?") records, head \(DemoHTTP.truncated(verified.json["head_hash"] as? String ?? ""))"
        )
        let userID = (try? Self.subject(of: dcrToken)) ?? ""
        return Outcome(
            userID: userID, username: username, instanceID: instanceID, templateInstanceID: templateInstanceID,
            refreshToken: refreshToken, accessToken: accessToken, secondsUntilRefused: refusedAfter)
    }

    /// Polls the audit API until the timeline shows registration, token issuance and the revocation.
    func auditTimeline(_ clientID: String, adminToken: String) async throws -> DemoResponse {
        let deadline = ContinuousClock.now + .seconds(30)
        var last: DemoResponse?
        while ContinuousClock.now < deadline {
            let response = try await http.get(
                "\(endpoints.audit)/audit/t/\(endpoints.tenant)/clients/\(clientID)/timeline",
                headers: [("Authorization", "Bearer \(adminToken)")])
            last = response
            if response.status == 200, response.json["registration"] is [String: Any],
                (response.json["revocations"] as? [Any])?.isEmpty == false, response.body.contains("device stolen"),
                ((response.json["tokens"] as? [String: Any])?["last_issued"]) is [String: Any]
            {
                return response
            }
            try await Task.sleep(for: .milliseconds(250))
        }
        throw DemoFailure(
            "the audit timeline did not show registration, tokens and revocation: \(last?.status ?? 0) \(last?.body.prefix(500) ?? "")"
        )
    }

    // MARK: Steps' building blocks

    private func authorizeURL(
        clientID: String, scope: String, verifier: String, state: String, extra: [(String, String)] = []
    ) -> String {
        "\(endpoints.issuer)/authorize?"
            + DemoHTTP.form(
                [
                    ("response_type", "code"), ("client_id", clientID), ("redirect_uri", DemoSeeder.dcrRedirectURI),
                    ("scope", scope),
                    ("state", state), ("code_challenge", PKCE.s256Challenge(for: verifier)),
                    ("code_challenge_method", "S256"),
                ] + extra)
    }

    private func code(from redirect: DemoResponse, state: String) throws -> String {
        let parameters = redirect.redirectParameters
        guard redirect.location?.hasPrefix(DemoSeeder.dcrRedirectURI) == true, parameters["state"] == state,
            parameters["iss"] == endpoints.issuer, let code = parameters["code"]
        else {
            throw DemoFailure(
                "unexpected authorization response: \(redirect.location ?? redirect.body.prefix(300).description)")
        }
        return code
    }

    /// A token request with a DPoP proof; a `use_dpop_nonce` answer is retried once with the server's nonce.
    private func dpopTokenRequest(
        _ dpop: DPoPProofSigner, _ form: [(String, String)], expecting status: Int? = 200
    ) async throws -> DemoResponse {
        var nonce: String?
        var response = try await http.postForm(
            endpoints.tokenEndpoint, form,
            headers: [("DPoP", try dpop.proof(method: "POST", url: endpoints.tokenEndpoint))])
        if response.status == 400, response.json["error"] as? String == "use_dpop_nonce" {
            nonce = response.headers.first(name: "DPoP-Nonce")
            response = try await http.postForm(
                endpoints.tokenEndpoint, form,
                headers: [("DPoP", try dpop.proof(method: "POST", url: endpoints.tokenEndpoint, nonce: nonce))])
        }
        if let status { try expect(response, status, "token request (\(form[0].1))") }
        return response
    }

    /// An API call through the sidecar with a DPoP proof bound to the token; retried once with a fresh nonce.
    private func api(_ dpop: DPoPProofSigner, _ method: String, _ path: String, token: String, body: String? = nil)
        async throws -> DemoResponse
    {
        let url = endpoints.sidecar + path
        func attempt(_ nonce: String?) async throws -> DemoResponse {
            var headers = [
                ("Authorization", "DPoP \(token)"),
                ("DPoP", try dpop.proof(method: method, url: url, accessToken: token, nonce: nonce)),
            ]
            if body != nil { headers.append(("Content-Type", "application/json")) }
            return try await http.send(method, url, headers: headers, body: body)
        }
        var response = try await attempt(nonce)
        if response.status == 401, response.headers.first(name: "WWW-Authenticate")?.contains("use_dpop_nonce") == true
        {
            nonceStore.value = response.headers.first(name: "DPoP-Nonce")
            response = try await attempt(nonce)
        }
        if let fresh = response.headers.first(name: "DPoP-Nonce") { nonceStore.value = fresh }
        return response
    }

    private var nonce: String? { nonceStore.value }
    private let nonceStore = NonceStore()

    private static func subject(of jwt: String) throws -> String {
        let parts = jwt.split(separator: ".")
        guard parts.count == 3, let payload = Base64URL.decode(String(parts[1])),
            let object = try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any]
        else { return "" }
        return object["sub"] as? String ?? ""
    }
}

/// The sidecar's latest nonce (it sends a fresh one with every answer when nonces are on).
private final class NonceStore: @unchecked Sendable {
    private let lock = NSLock()
    private var current: String?
    var value: String? {
        get { lock.withLock { current } }
        set { lock.withLock { current = newValue } }
    }
}
