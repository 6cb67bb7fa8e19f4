import Foundation
import Testing

@testable import LatchkeyCore
@testable import LatchkeyServer

@Suite struct AccessTokenVerifierTests {
    static let now: Int64 = 1_763_800_000
    let clock = FixedWallClock(unixSeconds: now)

    func verifier(_ minter: TokenMinter, keys: [JWK]? = nil, skew: Int64 = 10) throws -> AccessTokenVerifier {
        try AccessTokenVerifier(
            configuration: .init(
                issuers: [TokenMinter.issuer], audiences: [TokenMinter.audience, "orders"], clockSkewSeconds: skew),
            keySource: InMemoryKeySource(keys ?? [minter.jwk]), clock: clock)
    }

    func outcome(_ verifier: AccessTokenVerifier, _ token: String) async -> Result<
        VerifiedAccessToken, AccessTokenError
    > {
        do { return .success(try await verifier.verify(token)) } catch { return .failure(error) }
    }

    @Test func validTokenYieldsItsClaims() async throws {
        let minter = try TokenMinter()
        let token = try await verifier(minter).verify(try minter.token(now: Self.now))
        #expect(
            token
                == VerifiedAccessToken(
                    issuer: TokenMinter.issuer, tenant: TenantSlug(rawValue: "acme")!, subject: "user-1",
                    clientID: "client-1", scope: "orders:read", jkt: "thumb", expiresAt: Self.now + 300,
                    jti: token.jti))
        #expect(!token.jti.isEmpty, "the jti names the token in revocation events")
        // aud as an array, application/at+jwt, no cnf (Bearer), fractional NumericDate.
        let other = try await verifier(minter).verify(
            try minter.token(
                now: Self.now, ["aud": ["x", "orders"], "exp": Double(Self.now) + 60.5], removing: ["cnf", "scope"],
                typ: "application/at+jwt"))
        #expect(other.jkt == nil && other.scope == nil && other.expiresAt == Self.now + 60)
    }

    @Test func everyAlgorithmVerifies() async throws {
        for algorithm in JWSAlgorithm.allCases {
            let minter = try TokenMinter(algorithm: algorithm)
            #expect(
                try await verifier(minter).verify(try minter.token(now: Self.now)).clientID == "client-1",
                "\(algorithm)")
        }
    }

    @Test func timeClaimsHonourTheSkew() async throws {
        let minter = try TokenMinter()
        let verifier = try verifier(minter, skew: 10)
        #expect(await outcome(verifier, try minter.token(now: Self.now, ["exp": Self.now - 9])).isSuccess)
        #expect(await outcome(verifier, try minter.token(now: Self.now, ["exp": Self.now - 10])) == .failure(.expired))
        #expect(await outcome(verifier, try minter.token(now: Self.now, ["nbf": Self.now + 10])).isSuccess)
        #expect(
            await outcome(verifier, try minter.token(now: Self.now, ["nbf": Self.now + 11])) == .failure(.notYetValid))
        #expect(await outcome(verifier, try minter.token(now: Self.now, ["exp": Int64.min])) == .failure(.expired))
        #expect(await outcome(verifier, try minter.token(now: Self.now, ["nbf": Int64.max])) == .failure(.notYetValid))
    }

    @Test func claimsAndHeaderAreChecked() async throws {
        let minter = try TokenMinter()
        let verifier = try verifier(minter)
        let cases: [(String, AccessTokenError)] = [
            (try minter.token(now: Self.now, ["iss": "https://auth.example.com/t/other"]), .untrustedIssuer),
            (try minter.token(now: Self.now, ["aud": "https://elsewhere"]), .wrongAudience),
            (try minter.token(now: Self.now, ["aud": []]), .wrongAudience),
        ]
        for (token, expected) in cases { #expect(await outcome(verifier, token) == .failure(expected)) }
        let malformed = [
            try minter.token(now: Self.now, typ: "JWT"), try minter.token(now: Self.now, typ: nil),
            try minter.token(now: Self.now, ["exp": "soon"]), try minter.token(now: Self.now, removing: ["client_id"]),
            try minter.token(now: Self.now, removing: ["sub"]), try minter.token(now: Self.now, removing: ["jti"]),
            try minter.token(now: Self.now, ["cnf": ["x5t#S256": "abc"]]),
            try minter.token(now: Self.now, ["cnf": ["jkt": ""]]),
            "a.b.c", "", String(repeating: "a", count: 9_000),
        ]
        for token in malformed {
            guard case .failure(.malformed) = await outcome(verifier, token) else {
                Issue.record("accepted \(token.prefix(40))")
                continue
            }
        }
    }

    @Test func signaturesNeedTheIssuersKey() async throws {
        let minter = try TokenMinter()
        let impostor = try TokenMinter()
        let verifier = try verifier(minter)
        guard case .failure(.invalidSignature) = await outcome(verifier, try impostor.token(now: Self.now)) else {
            Issue.record("accepted a token signed by another key")
            return
        }
        guard
            case .failure(.invalidSignature) = await outcome(verifier, try minter.token(now: Self.now, kid: "unknown"))
        else {
            Issue.record("accepted an unknown kid")
            return
        }
        // An HS256 token with the public key as secret (key confusion) never gets near verification.
        let hs =
            Base64URL.encode(Data(#"{"alg":"HS256","typ":"at+jwt","kid":"k1"}"#.utf8)) + "."
            + (try minter.token(now: Self.now)).split(separator: ".")[1] + "." + Base64URL.encode(Data(count: 32))
        guard case .failure(.malformed) = await outcome(verifier, hs) else {
            Issue.record("HS256 accepted")
            return
        }
    }

    @Test func issuersMustBeLatchkeyTenantURLs() throws {
        #expect(AccessTokenVerifier.tenant(ofIssuer: "https://auth.example.com/t/acme") == TenantSlug(rawValue: "acme"))
        #expect(
            AccessTokenVerifier.tenant(ofIssuer: "http://127.0.0.1:8082/prefix/t/beta-2")
                == TenantSlug(rawValue: "beta-2"))
        for bad in [
            "https://auth.example.com/acme", "https://auth.example.com/t/ACME", "https://auth.example.com/t/acme/",
            "ftp://auth.example.com/t/acme", "https://auth.example.com/t/acme?x=1", "t/acme",
        ] {
            #expect(AccessTokenVerifier.tenant(ofIssuer: bad) == nil, "\(bad)")
        }
        let minter = try TokenMinter()
        #expect(throws: ConfigurationError.self) {
            try AccessTokenVerifier(
                configuration: .init(issuers: ["https://x/acme"], audiences: ["a"]),
                keySource: InMemoryKeySource([minter.jwk]))
        }
        #expect(throws: ConfigurationError.self) {
            try AccessTokenVerifier(
                configuration: .init(issuers: [TokenMinter.issuer], audiences: []),
                keySource: InMemoryKeySource([minter.jwk]))
        }
    }
}

extension Result {
    var isSuccess: Bool { if case .success = self { true } else { false } }
}

extension Result: @retroactive Equatable where Success == VerifiedAccessToken, Failure == AccessTokenError {}
