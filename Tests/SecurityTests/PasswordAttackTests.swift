import Foundation
import LatchkeyCore
import LatchkeyTestSupport
import NIOHTTP1
import Testing

@testable import LatchkeyCLI

/// Password guessing against the platform's sign-in page: forged client addresses do not buy fresh
/// budgets, and guesses from one address do not lock the user out elsewhere.
@Suite struct PasswordAttackTests {
    /// The demo tenant's sign-in page for the seeded DCR client.
    static func signInPage(_ platform: SeededPlatform) async throws -> (csrf: String, request: String) {
        var query = URLComponents(string: "\(platform.endpoints.issuer)/authorize")!
        query.queryItems = [
            URLQueryItem(name: "response_type", value: "code"),
            URLQueryItem(name: "client_id", value: platform.credentials.dcrClientID),
            URLQueryItem(name: "redirect_uri", value: DemoSeeder.dcrRedirectURI),
            URLQueryItem(name: "scope", value: "dcr"),
            URLQueryItem(name: "code_challenge", value: PKCE.s256Challenge(for: PKCE.generateVerifier())),
            URLQueryItem(name: "code_challenge_method", value: "S256"), URLQueryItem(name: "prompt", value: "login"),
        ]
        let page = try await platform.http.get(query.url!.absoluteString)
        return (try #require(page.field("csrf_token")), try #require(page.field("authorization_request")))
    }

    /// Delays are seconds long; a full-cost hash per guess on a busy test machine would outlast them.
    static let cheapHashing = ["PASSWORD_SCRYPT_LOG_N": "10"]

    static func signIn(
        _ platform: SeededPlatform, _ page: (csrf: String, request: String), password: String, forwardedFor: String
    ) async throws -> DemoResponse {
        try await platform.http.postForm(
            "\(platform.endpoints.issuer)/login",
            [
                ("csrf_token", page.csrf), ("authorization_request", page.request),
                ("username", platform.credentials.username), ("password", password),
            ], headers: [("X-Forwarded-For", forwardedFor)])
    }

    @Test func rotatingForwardedForFromAnUntrustedPeerStillCountsAsOneSource() async throws {
        try await SeededPlatform.run(settings: Self.cheapHashing) { platform in
            let page = try await Self.signInPage(platform)
            for index in 0..<4 {
                let guess = try await Self.signIn(
                    platform, page, password: "guess-\(index)-password", forwardedFor: "192.0.2.\(index + 1)")
                #expect(guess.status == 401, "guess \(index): \(guess.status)")
            }
            // A fresh forged address does not reset the delay the real source earned.
            let forged = try await Self.signIn(
                platform, page, password: "guess-9-password", forwardedFor: "198.51.100.77")
            #expect(forged.status == 429, "forged address: \(forged.status)")
            #expect(forged.headers.first(name: "Retry-After") != nil)
        }
    }

    @Test func guessesFromOneSourceDoNotLockTheUserOutFromAnother() async throws {
        // Behind a trusted ingress (loopback here) the forwarded address is the client.
        try await SeededPlatform.run(
            settings: Self.cheapHashing.merging(["TRUSTED_PROXIES": "127.0.0.1/32,::1/128"]) { $1 }
        ) { platform in
            let page = try await Self.signInPage(platform)
            let attacker = "203.0.113.66"
            var delayed: (since: ContinuousClock.Instant, seconds: Int)?
            for index in 0..<12 where delayed == nil {
                let guess = try await Self.signIn(
                    platform, page, password: "guess-\(index)-password", forwardedFor: attacker)
                #expect(guess.status == 401 || guess.status == 429, "guess \(index): \(guess.status)")
                if guess.status == 429 {
                    delayed = (.now, guess.headers.first(name: "Retry-After").flatMap(Int.init) ?? 0)
                }
            }
            let delay = try #require(delayed, "twelve wrong passwords from one address were never slowed down")
            let user = try await Self.signIn(
                platform, page, password: platform.credentials.password, forwardedFor: "198.51.100.20")
            #expect(user.status == 302 || platform.isConsentPage(user), "the user's own sign-in: \(user.status)")
            // The attacker's address is still waiting, even with the right password.
            let stolen = try await Self.signIn(
                platform, page, password: platform.credentials.password, forwardedFor: attacker)
            if ContinuousClock.now - delay.since < .seconds(delay.seconds - 1) {
                #expect(stolen.status == 429, "attacker with the password: \(stolen.status)")
            }
        }
    }
}
