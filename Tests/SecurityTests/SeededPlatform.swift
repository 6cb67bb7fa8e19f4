import Foundation
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyTestSupport
import PostgresNIO
import Testing

@testable import LatchkeyCLI

/// The whole platform as separate processes (four services, the embedded Kafka cluster, the demo API
/// behind the sidecar) on a scratch database, with the demo tenant seeded: what an attacker meets.
struct SeededPlatform {
    let processes: PlatformProcesses
    let endpoints: DemoEndpoints
    let credentials: DemoCredentials
    let http: DemoHTTP
    let database: DatabaseConfiguration

    /// Runs `attack` against a fresh platform and stops everything afterwards; a failure carries the logs.
    static func run(settings: [String: String] = [:], _ attack: (SeededPlatform) async throws -> Void) async throws {
        await PlatformGate.shared.enter()
        do {
            try await runAlone(settings: settings, attack)
        } catch {
            await PlatformGate.shared.leave()
            throw error
        }
        await PlatformGate.shared.leave()
    }

    private static func runAlone(settings: [String: String], _ attack: (SeededPlatform) async throws -> Void)
        async throws
    {
        try await TestDatabase.withScratchDatabase { scratch in
            try await TestDatabase.migrate(scratch)
            let processes = try await PlatformProcesses(database: scratch, settings: settings)
            let http = DemoHTTP()
            let urls = processes.urls
            let endpoints = DemoEndpoints(
                gateway: urls.gateway, tokenService: urls.tokenService, sidecar: urls.sidecar, audit: urls.audit,
                tenant: urls.tenant)
            do {
                let credentials = try await DemoSeeder(
                    http: http, endpoints: endpoints, bootstrapKey: PlatformProcesses.bootstrapKey
                ).seed()
                try await attack(
                    SeededPlatform(
                        processes: processes, endpoints: endpoints, credentials: credentials, http: http,
                        database: scratch))
            } catch {
                Issue.record(
                    "\(error)\n--- gateway\n\(processes.output("registration-gateway").suffix(2_000))\n--- token\n\(processes.output("token-service").suffix(2_000))\n--- sidecar\n\(processes.output("dpop-verifier").suffix(2_000))"
                )
            }
            try await http.shutdown()
            _ = await processes.stop()
        }
    }

    /// An admin token of the demo tenant (client credentials of the seeded admin client).
    func adminToken() async throws -> String {
        try await DemoSeeder.adminToken(
            http, endpoints, clientID: credentials.adminClientID, secret: credentials.adminClientSecret)
    }

    var adminBase: String { "\(endpoints.gateway)/admin/tenants/\(endpoints.tenant)" }

    /// The management port's base URL of `service` (`/healthz`, `/readyz`, `/metrics`), as it runs now.
    func management(_ service: String) -> String { processes.processes[service]?.managementURL ?? "http://127.0.0.1:1" }

    func bearer(_ token: String) -> [(String, String)] { [("Authorization", "Bearer \(token)")] }

    func basic(_ clientID: String, _ secret: String) -> [(String, String)] {
        [("Authorization", "Basic " + Data("\(clientID):\(secret)".utf8).base64EncodedString())]
    }

    /// Plays the mobile story up to a registered, DPoP-capable instance and returns what it produced.
    func mobileStory() async throws -> MobileStory.Outcome {
        try await MobileStory(http: http, endpoints: endpoints, credentials: credentials).run()
    }
}

/// One platform at a time: each is half a dozen processes, and several at once starve the rest of the
/// suite on a small machine (unrelated tests then miss their time limits).
actor PlatformGate {
    static let shared = PlatformGate()
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func enter() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func leave() {
        if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
    }
}

extension SeededPlatform {
    /// The answer of `/authorize` and, when it showed the sign-in page, of signing in the demo user there,
    /// and, when the consent page followed, of answering it.
    struct Authorization {
        var response: DemoResponse
        var verifier: String
        /// The consent page, when one was shown.
        var consentPage: DemoResponse?
        var code: String? { response.redirectParameters["code"] }
        var error: String? { response.redirectParameters["error"] }
    }

    /// Whether `page` is the token service's consent page.
    func isConsentPage(_ page: DemoResponse) -> Bool {
        page.status == 200 && page.body.contains("action=\"/t/\(endpoints.tenant)/consent\"")
    }

    /// Runs `/authorize` for `clientID` with PKCE; signs in the demo user when the sign-in page is shown,
    /// and answers the consent page with `consent` (`allow`, `deny`) when it follows, or stops there when nil.
    func authorize(
        clientID: String, redirectURI: String, scope: String?, extra: [(String, String)] = [],
        consent: String? = "allow"
    ) async throws -> Authorization {
        let verifier = PKCE.generateVerifier()
        var query = URLComponents(string: "\(endpoints.issuer)/authorize")!
        query.queryItems =
            [
                URLQueryItem(name: "response_type", value: "code"), URLQueryItem(name: "client_id", value: clientID),
                URLQueryItem(name: "redirect_uri", value: redirectURI), URLQueryItem(name: "state", value: "attack"),
                URLQueryItem(name: "code_challenge", value: PKCE.s256Challenge(for: verifier)),
                URLQueryItem(name: "code_challenge_method", value: "S256"),
            ] + (scope.map { [URLQueryItem(name: "scope", value: $0)] } ?? [])
            + extra.map { URLQueryItem(name: $0.0, value: $0.1) }
        var response = try await http.get(query.url!.absoluteString)
        if !isConsentPage(response), response.status == 200, let csrf = response.field("csrf_token"),
            let pending = response.field("authorization_request")
        {
            response = try await http.postForm(
                "\(endpoints.issuer)/login",
                [
                    ("csrf_token", csrf), ("authorization_request", pending),
                    ("username", credentials.username), ("password", credentials.password),
                ])
        }
        guard isConsentPage(response) else { return Authorization(response: response, verifier: verifier) }
        guard let consent, let csrf = response.field("csrf_token"),
            let pending = response.field("authorization_request")
        else {
            return Authorization(response: response, verifier: verifier, consentPage: response)
        }
        let answered = try await http.postForm(
            "\(endpoints.issuer)/consent",
            [
                ("csrf_token", csrf), ("authorization_request", pending), ("decision", consent),
            ])
        return Authorization(response: answered, verifier: verifier, consentPage: response)
    }

    /// Exchanges an authorization code at the token endpoint.
    func redeem(_ authorization: Authorization, clientID: String, redirectURI: String, headers: [(String, String)] = [])
        async throws -> DemoResponse
    {
        try await http.postForm(
            endpoints.tokenEndpoint,
            [
                ("grant_type", "authorization_code"), ("code", authorization.code ?? ""), ("redirect_uri", redirectURI),
                ("client_id", clientID), ("code_verifier", authorization.verifier),
            ], headers: headers)
    }

    /// Creates a client through the admin API and returns its registration answer.
    func createClient(_ metadata: String, adminToken: String) async throws -> DemoResponse {
        try expect(
            try await http.postJSON("\(adminBase)/clients", metadata, headers: bearer(adminToken)), 201,
            "create a client")
    }
}
