import Foundation
import LatchkeyTestSupport
import Testing

@testable import LatchkeyCore

@Suite("Shared vectors")
struct SharedVectorTests {
    /// Runs one DPoP vector through a verifier configured exactly as the vector says.
    func run(_ vector: SharedVectors.DPoPVector, cache: InMemoryDPoPReplayCache? = nil) async -> Result<
        DPoPVerifiedProof, DPoPError
    > {
        let clock = FixedWallClock(unixSeconds: vector.now)
        let configuration = DPoPProofVerifier.Configuration(
            iatWindowSeconds: vector.iatWindowSeconds,
            nonceMode: vector.requiredNonce == nil ? .disabled : .required)
        let verifier = DPoPProofVerifier(
            configuration: configuration,
            replayCache: cache ?? InMemoryDPoPReplayCache(maxEntries: 1_000, clock: clock),
            nonceSource: vector.requiredNonce.map { ExactDPoPNonceSource(value: $0) },
            clock: clock)
        do {
            return .success(
                try await verifier.verify(
                    headerValues: [vector.proof], method: vector.request.method,
                    url: vector.request.url, accessToken: vector.accessToken,
                    expectedJKT: vector.expectedJKT))
        } catch {
            return .failure(error)
        }
    }

    func check(_ vectors: [SharedVectors.DPoPVector], file: String) async {
        for vector in vectors {
            #expect(["valid", "invalid"].contains(vector.expected), "\(file) \(vector.name): unknown verdict")
            switch await run(vector) {
            case .success(let proof):
                #expect(vector.expected == "valid", "\(file) \(vector.name): accepted but expected \(vector.expected)")
                if let expectedJKT = vector.expectedJKT {
                    #expect(proof.jkt == expectedJKT, "\(file) \(vector.name): jkt")
                }
            case .failure(let error):
                #expect(vector.expected == "invalid", "\(file) \(vector.name): rejected (\(error)) but expected valid")
                if vector.name.hasPrefix("nonce-") {
                    #expect(error.requiresNonce, "\(file) \(vector.name): nonce failures answer use_dpop_nonce")
                } else {
                    #expect(!error.requiresNonce, "\(file) \(vector.name): \(error)")
                }
            }
        }
    }

    @Test func dpopProofVectors() async throws {
        let file = try SharedVectors.load("dpop-proofs.json", as: SharedVectors.DPoPFile.self)
        #expect(file.vectors.count == 33)
        #expect(Set(file.vectors.map(\.name)).count == file.vectors.count)
        #expect(file.vectors.filter { $0.expected == "valid" }.count == 9)
        await check(file.vectors, file: "dpop-proofs.json")
    }

    @Test func dpopReplayVector() async throws {
        let file = try SharedVectors.load("dpop-proofs.json", as: SharedVectors.DPoPFile.self)
        let replay = try #require(file.replay, "dpop-proofs.json has no replay case")
        let vector = SharedVectors.DPoPVector(
            name: "replay", proof: replay.proof, request: replay.request, accessToken: replay.accessToken,
            expectedJKT: replay.expectedJKT, requiredNonce: nil, now: file.clockNow,
            iatWindowSeconds: file.iatWindowSeconds, expected: "valid")
        let cache = InMemoryDPoPReplayCache(maxEntries: 1_000, clock: FixedWallClock(unixSeconds: file.clockNow))
        let first = await run(vector, cache: cache)
        #expect((try? first.get()) != nil, "first presentation must be accepted: \(first)")
        let second = await run(vector, cache: cache)
        guard case .failure(let error) = second else {
            Issue.record("second presentation of the same proof was accepted")
            return
        }
        #expect(error == .invalidProof("jti has already been used"))
    }

    @Test func jwsEdgeCaseVectors() async throws {
        let file = try SharedVectors.load("jws-edge-cases.json", as: SharedVectors.DPoPFile.self)
        #expect(file.vectors.count == 18)
        #expect(Set(file.vectors.map(\.name)).count == file.vectors.count)
        #expect(file.vectors.filter { $0.expected == "valid" }.count == 1)
        await check(file.vectors, file: "jws-edge-cases.json")
    }

    @Test func pkceVectors() throws {
        let file = try SharedVectors.load("pkce.json", as: SharedVectors.PKCEFile.self)
        #expect(file.valid.count == 4)
        #expect(file.invalidVerifiers.count == 4)
        for vector in file.valid {
            let method = try #require(PKCE.Method(rawValue: vector.method), "\(vector.name): method")
            #expect(PKCE.isValidVerifier(vector.codeVerifier), "\(vector.name)")
            #expect(PKCE.s256Challenge(for: vector.codeVerifier) == vector.codeChallenge, "\(vector.name)")
            #expect(
                PKCE.matches(verifier: vector.codeVerifier, challenge: vector.codeChallenge, method: method),
                "\(vector.name)")
        }
        for vector in file.invalidVerifiers {
            #expect(!PKCE.isValidVerifier(vector.codeVerifier), "\(vector.name)")
            let challenge = PKCE.s256Challenge(for: vector.codeVerifier)
            #expect(throws: PKCE.Failure.invalidVerifierSyntax, "\(vector.name)") {
                try PKCE.verify(verifier: vector.codeVerifier, challenge: challenge, method: .s256)
            }
        }
    }

    @Test func jwkThumbprintVectors() throws {
        let vectors = try SharedVectors.load("jwk-thumbprints.json", as: [SharedVectors.ThumbprintVector].self)
        #expect(vectors.count == 4)
        #expect(Set(vectors.map(\.jwk.kty)) == ["EC", "RSA", "OKP"])
        for vector in vectors {
            #expect(try vector.jwk.thumbprint() == vector.jkt, "\(vector.name)")
            // Every vector key is also a usable public key with the same thumbprint.
            #expect(try JWSPublicKey(jwk: vector.jwk).thumbprint == vector.jkt, "\(vector.name)")
        }
    }
}
