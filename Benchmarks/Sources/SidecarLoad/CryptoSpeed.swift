import Crypto
import Foundation
import LatchkeyCore

/// In-process baselines on the current core: raw swift-crypto P-256 verifies, and whole DPoP proof
/// checks through the LatchkeyCore verifier (parse, JSON, signature, thumbprint, replay cache), no HTTP.
enum CryptoSpeed {
    static func p256VerifiesPerSecond(seconds: Double) -> Double {
        let key = P256.Signing.PrivateKey()
        let message = Data(repeating: 7, count: 600)
        let signature = try! key.signature(for: message)
        return measure(seconds: seconds) { _ = key.publicKey.isValidSignature(signature, for: message) }
    }

    static func proofChecksPerSecond(seconds: Double) async throws -> Double {
        let signer = DPoPProofSigner(key: try SigningKey.generate(.es256))
        let token = "bench-token"
        let url = "https://api.example.com/api/items"
        let proofs = try (0..<50_000).map { _ in try signer.proof(method: "GET", url: url, accessToken: token) }
        let verifier = DPoPProofVerifier(replayCache: InMemoryDPoPReplayCache(maxEntries: 100_000))
        var index = 0
        let started = ContinuousClock.now
        let limit = Duration.milliseconds(Int(seconds * 1_000))
        while ContinuousClock.now - started < limit, index < proofs.count {
            _ = try await verifier.verify(
                headerValues: [proofs[index]], method: "GET", url: url, accessToken: token,
                expectedJKT: signer.jkt)
            index += 1
        }
        return Double(index) / (ContinuousClock.now - started).seconds
    }

    private static func measure(seconds: Double, _ body: () -> Void) -> Double {
        var count = 0
        let started = ContinuousClock.now
        let limit = Duration.milliseconds(Int(seconds * 1_000))
        while ContinuousClock.now - started < limit {
            for _ in 0..<100 { body() }
            count += 100
        }
        return Double(count) / (ContinuousClock.now - started).seconds
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
