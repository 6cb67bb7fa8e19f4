import Crypto
import Foundation
import Testing

@testable import LatchkeyCore

@Suite("DPoPProofVerifier")
struct DPoPProofVerifierTests {
    static let now: Int64 = 1_763_800_000
    let clock = FixedWallClock(unixSeconds: DPoPProofVerifierTests.now)
    let url = "https://api.example.com/v1/orders"
    let token = "access-token-value"

    func verifier(
        _ configuration: DPoPProofVerifier.Configuration = .init(),
        nonceSource: (any DPoPNonceSource)? = nil,
        cache: InMemoryDPoPReplayCache? = nil
    ) -> DPoPProofVerifier {
        DPoPProofVerifier(
            configuration: configuration,
            replayCache: cache ?? InMemoryDPoPReplayCache(maxEntries: 100, clock: clock),
            nonceSource: nonceSource, clock: clock)
    }

    func signer(_ algorithm: JWSAlgorithm = .es256) -> DPoPProofSigner {
        DPoPProofSigner(key: JOSETestKeys.key(for: algorithm), clock: clock)
    }

    /// A proof with a hand-written header and payload, signed by the ES256 test key.
    func rawProof(header: String? = nil, payload: String) throws -> String {
        let jwk = String(decoding: try JSONEncoder().encode(JOSETestKeys.es256.bareJWK), as: UTF8.self)
        return try signRaw(
            header: header ?? #"{"typ":"dpop+jwt","alg":"ES256","jwk":\#(jwk)}"#, payload: payload,
            key: JOSETestKeys.es256)
    }

    func expectInvalid(
        _ verifier: DPoPProofVerifier, _ values: [String], method: String = "GET", url: String? = nil,
        accessToken: String? = nil, expectedJKT: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async -> DPoPError? {
        do {
            _ = try await verifier.verify(
                headerValues: values, method: method, url: url ?? self.url,
                accessToken: accessToken, expectedJKT: expectedJKT)
            Issue.record("proof was accepted", sourceLocation: sourceLocation)
            return nil
        } catch {
            return error
        }
    }

    @Test(arguments: JWSAlgorithm.allCases)
    func validProofAtResource(_ algorithm: JWSAlgorithm) async throws {
        let signer = signer(algorithm)
        let proof = try signer.proof(method: "GET", url: url + "?page=1", accessToken: token)
        let result = try await verifier().verify(
            headerValues: [proof], method: "GET", url: url + "?page=2",
            accessToken: token, expectedJKT: signer.jkt)
        #expect(result.jkt == signer.jkt)
        #expect(result.algorithm == algorithm)
        #expect(result.htm == "GET")
        #expect(result.htu == url)
        #expect(result.iat == Self.now)
        #expect(result.jwk == JOSETestKeys.key(for: algorithm).bareJWK)
        #expect(result.nonce == nil)
    }

    @Test func validProofAtTokenEndpoint() async throws {
        let proof = try signer().proof(method: "POST", url: "https://as.example.com/t/acme/token")
        let result = try await verifier().verify(
            headerValues: [proof], method: "POST", url: "https://AS.example.com:443/t/acme/token")
        #expect(result.jkt == signer().jkt)
    }

    @Test func exactlyOneHeader() async throws {
        let proof = try signer().proof(method: "GET", url: url)
        #expect(await expectInvalid(verifier(), [])?.reason == "missing DPoP header")
        #expect(await expectInvalid(verifier(), [proof, proof])?.reason == "more than one DPoP header")
    }

    @Test func sizeIsBounded() async throws {
        let proof = try signer().proof(method: "GET", url: url, jti: String(repeating: "j", count: 9_000))
        #expect(await expectInvalid(verifier(), [proof])?.errorCode == "invalid_dpop_proof")
        let roomy = verifier(.init(maxProofBytes: 16_384))
        _ = try await roomy.verify(headerValues: [proof], method: "GET", url: url)
    }

    @Test func typMustBeDPoP() async throws {
        let jwk = String(decoding: try JSONEncoder().encode(JOSETestKeys.es256.bareJWK), as: UTF8.self)
        let payload = #"{"jti":"1","htm":"GET","htu":"\#(url)","iat":\#(Self.now)}"#
        for header in [
            #"{"typ":"JWT","alg":"ES256","jwk":\#(jwk)}"#, #"{"alg":"ES256","jwk":\#(jwk)}"#,
            #"{"typ":"DPoP+jwt","alg":"ES256","jwk":\#(jwk)}"#,
            #"{"typ":"application/dpop+jwt","alg":"ES256","jwk":\#(jwk)}"#,
        ] {
            let proof = try rawProof(header: header, payload: payload)
            #expect(await expectInvalid(verifier(), [proof])?.reason == "typ must be dpop+jwt")
        }
    }

    @Test func algorithmAllowListAndKeyMatch() async throws {
        let proof = try signer(.edDSA).proof(method: "GET", url: url)
        let error = await expectInvalid(verifier(.init(allowedAlgorithms: [.es256])), [proof])
        #expect(error == .invalidProof("alg EdDSA is not allowed"))

        let p384 = String(decoding: try JSONEncoder().encode(JOSETestKeys.es384.bareJWK), as: UTF8.self)
        let mismatched = try rawProof(
            header: #"{"typ":"dpop+jwt","alg":"ES256","jwk":\#(p384)}"#,
            payload: #"{"jti":"1","htm":"GET","htu":"\#(url)","iat":\#(Self.now)}"#)
        #expect(await expectInvalid(verifier(), [mismatched])?.reason == "ES256 requires crv P-256, got P-384")
    }

    @Test func jwkMustBePresentAndPublic() async throws {
        let payload = #"{"jti":"1","htm":"GET","htu":"\#(url)","iat":\#(Self.now)}"#
        let missing = try rawProof(header: #"{"typ":"dpop+jwt","alg":"ES256"}"#, payload: payload)
        #expect(await expectInvalid(verifier(), [missing])?.reason == "jwk header is missing")
        let jwk = JOSETestKeys.es256.bareJWK
        let withD = #"{"kty":"EC","crv":"P-256","x":"\#(jwk.x!)","y":"\#(jwk.y!)","d":"AAAA"}"#
        let privateProof = try rawProof(header: #"{"typ":"dpop+jwt","alg":"ES256","jwk":\#(withD)}"#, payload: payload)
        #expect(await expectInvalid(verifier(), [privateProof])?.reason == "jwk contains private key material")
    }

    @Test func methodAndURLMustMatch() async throws {
        let proof = try signer().proof(method: "GET", url: url)
        #expect(
            await expectInvalid(verifier(), [proof], method: "POST")?.reason == "htm does not match the request method")
        #expect(
            await expectInvalid(verifier(), [proof], method: "get")?.reason == "htm does not match the request method")
        #expect(
            await expectInvalid(verifier(), [proof], url: "https://api.example.com/v1/users")?.reason
                == "htu does not match the request URL")
        #expect(await expectInvalid(verifier(), [proof], url: "http://api.example.com/v1/orders") != nil)
        #expect(await expectInvalid(verifier(), [proof], url: "https://api.example.com:8443/v1/orders") != nil)
        #expect(
            await expectInvalid(verifier(), [proof], url: "ftp://api.example.com/v1/orders")?.reason
                == "request URL cannot be normalised")
    }

    @Test func iatWindowIsInclusiveAndConfigurable() async throws {
        let signer = signer()
        for offset in [-60, 0, 60] as [Int64] {
            let proof = try signer.proof(method: "GET", url: url, iat: Self.now + offset)
            _ = try await verifier().verify(headerValues: [proof], method: "GET", url: url)
        }
        for offset in [-61, 61, -3_600, Int64.min / 2] as [Int64] {
            let proof = try signer.proof(method: "GET", url: url, iat: Self.now + offset)
            #expect(await expectInvalid(verifier(), [proof])?.reason == "iat is outside the acceptance window")
        }
        let proof = try signer.proof(method: "GET", url: url, iat: Self.now - 100)
        _ = try await verifier(.init(iatWindowSeconds: 120)).verify(headerValues: [proof], method: "GET", url: url)
    }

    @Test func claimsAreTyped() async throws {
        let payloads = [
            #"{"jti":"1","htm":"GET","htu":"\#(url)","iat":"\#(Self.now)"}"#,
            #"{"jti":"1","htm":"GET","htu":"\#(url)","iat":\#(Self.now).5}"#,
            #"{"jti":1,"htm":"GET","htu":"\#(url)","iat":\#(Self.now)}"#,
            #"{"jti":"","htm":"GET","htu":"\#(url)","iat":\#(Self.now)}"#,
            #"{"jti":"1","htm":["GET"],"htu":"\#(url)","iat":\#(Self.now)}"#,
            #"{"jti":"1","htm":"GET","htu":null,"iat":\#(Self.now)}"#,
            #"{"jti":"1","htm":"GET","htu":"\#(url)"}"#,
            #"["jti"]"#,
        ]
        for payload in payloads {
            let proof = try rawProof(payload: payload)
            #expect(await expectInvalid(verifier(), [proof])?.errorCode == "invalid_dpop_proof", "\(payload)")
        }
    }

    @Test func noncesWhenRequired() async throws {
        let source = ExactDPoPNonceSource(value: "server-nonce")
        let required = verifier(.init(nonceMode: .required), nonceSource: source)
        let signer = signer()
        let missing = await expectInvalid(required, [try signer.proof(method: "GET", url: url)])
        #expect(missing == .useNonce("a DPoP nonce is required"))
        #expect(missing?.requiresNonce == true)
        #expect(missing?.errorCode == "use_dpop_nonce")
        let wrong = await expectInvalid(required, [try signer.proof(method: "GET", url: url, nonce: "stale")])
        #expect(wrong == .useNonce("the DPoP nonce is invalid or expired"))
        let result = try await required.verify(
            headerValues: [try signer.proof(method: "GET", url: url, nonce: "server-nonce")],
            method: "GET", url: url)
        #expect(result.nonce == "server-nonce")

        let optional = verifier(.init(nonceMode: .validateIfPresent), nonceSource: source)
        _ = try await optional.verify(
            headerValues: [try signer.proof(method: "GET", url: url)], method: "GET", url: url)
        #expect(
            await expectInvalid(optional, [try signer.proof(method: "GET", url: url, nonce: "stale")])?.requiresNonce
                == true)

        let disabled = verifier()
        _ = try await disabled.verify(
            headerValues: [try signer.proof(method: "GET", url: url, nonce: "anything")], method: "GET", url: url)
    }

    @Test func hmacNonceSourceIntegrates() async throws {
        let source = try HMACDPoPNonceSource(secret: SymmetricKey(size: .bits256), clock: clock)
        let required = verifier(.init(nonceMode: .required), nonceSource: source)
        let proof = try signer().proof(method: "GET", url: url, nonce: source.currentNonce())
        _ = try await required.verify(headerValues: [proof], method: "GET", url: url)
    }

    @Test func accessTokenHashAndBinding() async throws {
        let signer = signer()
        let bound = try signer.proof(method: "GET", url: url, accessToken: token)
        #expect(
            await expectInvalid(verifier(), [bound], accessToken: "other-token")?.reason
                == "ath does not match the access token")
        let unbound = try signer.proof(method: "GET", url: url)
        #expect(
            await expectInvalid(verifier(), [unbound], accessToken: token)?.reason
                == "ath is required with an access token")
        let otherJKT = DPoPProofSigner(key: JOSETestKeys.es384).jkt
        #expect(
            await expectInvalid(verifier(), [bound], accessToken: token, expectedJKT: otherJKT)?.reason
                == "proof key does not match the token's cnf.jkt")
        #expect(
            signer.jkt
                == Base64URL.encode(SHA256.hash(data: Data(try JWKThumbprint.canonicalJSON(signer.key.bareJWK).utf8))))
    }

    @Test func replayIsRejectedAndFailuresDoNotPoisonTheCache() async throws {
        let cache = InMemoryDPoPReplayCache(maxEntries: 100, clock: clock)
        let verifier = verifier(cache: cache)
        let proof = try signer().proof(method: "GET", url: url, jti: "fixed-jti")
        // A failing presentation (wrong URL) must not record the jti.
        #expect(await expectInvalid(verifier, [proof], url: "https://api.example.com/other") != nil)
        #expect(cache.count == 0)
        _ = try await verifier.verify(headerValues: [proof], method: "GET", url: url)
        #expect(await expectInvalid(verifier, [proof])?.reason == "jti has already been used")
        // The same jti from another key is a different proof.
        let other = try DPoPProofSigner(key: JOSETestKeys.edDSA, clock: clock).proof(
            method: "GET", url: url, jti: "fixed-jti")
        _ = try await verifier.verify(headerValues: [other], method: "GET", url: url)
        #expect(cache.count == 2)
    }

    @Test func signatureMustVerify() async throws {
        let proof = try signer().proof(method: "GET", url: url)
        let otherKeyProof = try DPoPProofSigner(key: try SigningKey.generate(.es256), clock: clock).proof(
            method: "GET", url: url)
        // Header (with its jwk) from one key, signature from another.
        let spliced = replacingSegment(2, of: proof, with: String(otherKeyProof.split(separator: ".")[2]))
        #expect(await expectInvalid(verifier(), [spliced])?.reason == "signature does not verify")
    }
    @Test func aRememberedHeaderStillNeedsItsSignatureClaimsAndFreshJti() async throws {
        let cache = InMemoryDPoPReplayCache(maxEntries: 100, clock: clock)
        let verifier = verifier(cache: cache)
        let signer = signer()
        _ = try await verifier.verify(
            headerValues: [try signer.proof(method: "GET", url: url)], method: "GET", url: url)
        // Same header (now remembered), signature from another key.
        let otherKeyProof = try DPoPProofSigner(key: try SigningKey.generate(.es256), clock: clock).proof(
            method: "GET", url: url)
        let spliced = replacingSegment(
            2, of: try signer.proof(method: "GET", url: url), with: String(otherKeyProof.split(separator: ".")[2]))
        #expect(await expectInvalid(verifier, [spliced])?.reason == "signature does not verify")
        // Same header, broken structure and claims.
        let proof = try signer.proof(method: "GET", url: url, jti: "once")
        #expect(await expectInvalid(verifier, [proof + ".x"])?.reason == "JWS must have exactly three segments")
        #expect(
            await expectInvalid(verifier, [replacingSegment(1, of: proof, with: "!!")])?.reason
                == "JWS payload is not strict base64url")
        #expect(
            await expectInvalid(verifier, [proof], method: "POST")?.reason == "htm does not match the request method")
        _ = try verifier.verifySynchronously(headerValues: [proof], method: "GET", url: url)
        #expect(await expectInvalid(verifier, [proof])?.reason == "jti has already been used")
        #expect(throws: DPoPError.invalidProof("jti has already been used")) {
            try verifier.verifySynchronously(headerValues: [proof], method: "GET", url: url)
        }
    }

    @Test func payloadJSONIsStrict() async throws {
        let claims = #""jti":"1","htm":"GET","htu":"\#(url)","iat":\#(Self.now)"#
        for payload in [
            "{\(claims),\"jti\":\"2\"}",  // duplicate member
            // Deep nesting.
            "{\(claims),\"x\":\(String(repeating: "[", count: 40) + String(repeating: "]", count: 40))}",
            "{\(claims)} x",  // trailing data
            "{\(claims),\"ath\":5}",  // mistyped optional claim
        ] {
            #expect(
                await expectInvalid(verifier(), [try rawProof(payload: payload)])?.errorCode == "invalid_dpop_proof",
                "\(payload)")
        }
        // Unknown members and null optional claims are fine.
        _ = try await verifier().verify(
            headerValues: [try rawProof(payload: "{\(claims),\"nonce\":null,\"x\":{\"y\":[1]}}")],
            method: "GET", url: url)
    }
}
