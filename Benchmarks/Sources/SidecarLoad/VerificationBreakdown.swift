import Crypto
import Foundation
import LatchkeyCore

/// `SidecarLoad verify-breakdown`: where a proxied request's verification time goes, in process, in one
/// run. Measures the raw P-256 verify of the proofs' own signing inputs next to the sidecar's
/// verification of a request whose token is cached (the token's hash for the cache lookup, then
/// `DPoPProofVerifier.verifySynchronously` with the cached `ath`, the token's `cnf.jkt` and a full replay
/// cache), reports the difference as the non-crypto cost, and times on its own each step that can be
/// reached through public API (`ath` is the per-request cost it had before the token cache held it). Every round uses a fresh verifier and replay cache
/// (filled to its bound first, as in a long run), so the same proofs serve every round.
struct VerificationBreakdown {
    let seconds: Double
    let rounds: Int
    let proofCount: Int
    let replayEntries: Int

    static let origin = "https://api.example.com"
    static let path = "/api/items"
    static let issuer = "http://127.0.0.1:18090/t/bench"

    func run() throws {
        let issuerKey = try SigningKey.generate(.es256)
        let signer = DPoPProofSigner(key: try SigningKey.generate(.es256))
        let token = try Self.accessToken(issuerKey: issuerKey, jkt: signer.jkt)
        let url = Self.origin + Self.path
        let proofs = try (0..<proofCount).map { _ in
            try signer.proof(method: "GET", url: url, accessToken: token)
        }
        let crypto = try proofs.map(Self.cryptoInput)
        let ath = DPoPProofVerifier.accessTokenHash(token)
        print("proofs \(proofs.count) of \(proofs[0].utf8.count) bytes; access token \(token.utf8.count) bytes")

        for round in 1...rounds {
            let raw = Self.measure(seconds: seconds, count: crypto.count, wraps: true) { index in
                let input = crypto[index]
                _ = input.key.isValidSignature(input.signature, for: SHA256.hash(data: input.signingInput))
            }
            let verifier = DPoPProofVerifier(
                configuration: .init(iatWindowSeconds: 300),
                replayCache: Self.fullReplayCache(entries: replayEntries))
            var failures = 0
            let full = Self.measure(seconds: seconds, count: proofs.count, wraps: false) { index in
                // As in the sidecar: the token's SHA-256 finds it in the token cache, whose entry holds its
                // `ath`; then the proof.
                var presented = token
                _ = presented.withUTF8 { SHA256.hash(data: UnsafeRawBufferPointer($0)) }
                do {
                    _ = try verifier.verifySynchronously(
                        headerValues: [proofs[index]], method: "GET", url: url, accessTokenHash: ath,
                        expectedJKT: signer.jkt)
                } catch {
                    failures += 1
                }
            }
            guard failures == 0 else { throw BenchmarkError("\(failures) proofs failed verification") }
            let steps = stepTimings(proofs: proofs, token: token, url: url)
            print(
                String(
                    format: "round %d: median µs: p256_verify %.1f, full_verification %.1f, non_crypto %.1f "
                        + "(raw/full %.2f); full verification p99 %.1f µs, max %.1f µs; "
                        + "mean µs (with other processes' time): p256_verify %.1f, full_verification %.1f",
                    round, raw.medianMicros, full.medianMicros, full.medianMicros - raw.medianMicros,
                    raw.medianMicros / full.medianMicros, full.p99Micros, full.maxMicros, raw.meanMicros,
                    full.meanMicros))
            print(
                "  steps (median µs each): "
                    + steps.map { String(format: "%@ %.2f", $0.name, $0.timing.medianMicros) }.joined(separator: ", "))
        }
    }

    /// The steps of a verification that can be timed on their own through public API.
    private func stepTimings(proofs: [String], token: String, url: String) -> [(name: String, timing: Timing)] {
        let stepSeconds = seconds / 4
        let payloads = proofs.map { $0.split(separator: ".")[1] }
        let decoded = payloads.map { Base64URL.decodeBytes($0.utf8)! }
        let htu = url
        let ath = DPoPProofVerifier.accessTokenHash(token)
        let cache = Self.fullReplayCache(entries: replayEntries)
        let jtis = (0..<200_000).map { _ in UUID().uuidString.lowercased() }
        let expiry = Int64(Date().timeIntervalSince1970) + 300
        return [
            (
                // The sidecar's token cache is keyed by this hash (then one locked dictionary lookup).
                "token_sha256",
                Self.measure(seconds: stepSeconds, count: 1, wraps: true, batch: 50) { _ in
                    var token = token
                    _ = token.withUTF8 { SHA256.hash(data: UnsafeRawBufferPointer($0)) }
                }
            ),
            (
                "base64url_payload",
                Self.measure(seconds: stepSeconds, count: payloads.count, wraps: true, batch: 50) { index in
                    _ = Base64URL.decodeBytes(payloads[index].utf8)
                }
            ),
            (
                "claims_json",
                Self.measure(seconds: stepSeconds, count: decoded.count, wraps: true, batch: 50) { index in
                    _ = try? StrictJSONParser.parse(decoded[index], maximumDepth: 16)
                }
            ),
            (
                "htu_normalize_x2",
                Self.measure(seconds: stepSeconds, count: 1, wraps: true, batch: 50) { _ in
                    _ = try? HTUNormalizer.normalize(htu)
                    _ = try? HTUNormalizer.normalize(url)
                }
            ),
            (
                "ath",
                Self.measure(seconds: stepSeconds, count: 1, wraps: true, batch: 50) { _ in
                    _ = ConstantTime.equals(DPoPProofVerifier.accessTokenHash(token), ath)
                }
            ),
            (
                "replay_insert_full_cache",
                Self.measure(seconds: stepSeconds, count: jtis.count, wraps: false, batch: 50) { index in
                    _ = cache.insertNow(jkt: "bench", jti: jtis[index], expiresAt: expiry)
                }
            ),
        ]
    }

    /// The crypto alone: the key, the raw signature and the signing input, decoded beforehand.
    private static func cryptoInput(_ proof: String) throws -> (
        key: P256.Signing.PublicKey, signature: P256.Signing.ECDSASignature, signingInput: [UInt8]
    ) {
        let parts = proof.split(separator: ".")
        let header = try JSONSerialization.jsonObject(with: Data(Base64URL.decodeBytes(parts[0].utf8)!))
        guard let jwk = (header as? [String: Any])?["jwk"] as? [String: String], let x = jwk["x"], let y = jwk["y"],
            let xBytes = Base64URL.decode(x), let yBytes = Base64URL.decode(y)
        else { throw BenchmarkError("proof header without an EC jwk") }
        let key = try P256.Signing.PublicKey(rawRepresentation: xBytes + yBytes)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: Base64URL.decodeBytes(parts[2].utf8)!)
        return (key, signature, Array(proof.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count)))
    }

    /// An RFC 9068 access token of the size the load benchmark uses.
    private static func accessToken(issuerKey: SigningKey, jkt: String) throws -> String {
        let now = Int(Date().timeIntervalSince1970)
        let claims: [String: Any] = [
            "iss": issuer, "sub": "bench-user", "aud": origin, "exp": now + 3_600,
            "iat": now, "jti": UUID().uuidString, "client_id": "bench-client", "scope": "bench",
            "cnf": ["jkt": jkt],
        ]
        let payload = try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])
        return try CompactJWS.sign(
            payload: payload, using: issuerKey, header: JWSHeaderParameters(typ: "at+jwt", kid: "bench"))
    }

    /// A replay cache at its bound, its entries spread over the window as steady traffic leaves them.
    private static func fullReplayCache(entries: Int) -> InMemoryDPoPReplayCache {
        let cache = InMemoryDPoPReplayCache(maxEntries: entries)
        let now = Int64(Date().timeIntervalSince1970)
        for index in 0..<entries {
            _ = cache.insertNow(jkt: "fill", jti: "\(index)", expiresAt: now + 1 + Int64(index % 300))
        }
        return cache
    }

    /// Calls `body` with indexes 0, 1, … for about `seconds` (wrapping at `count`, or stopping there when
    /// an index must not be used twice), timing batches of `batch` calls. The median batch is what a call
    /// costs when nothing else runs: on a shared machine the mean also holds other processes' time slices.
    private static func measure(seconds: Double, count: Int, wraps: Bool, batch: Int = 1, _ body: (Int) -> Void)
        -> Timing
    {
        var calls = 0
        var batches: [Duration] = []
        batches.reserveCapacity(Int(seconds * 1_000_000) / batch)
        let started = ContinuousClock.now
        let limit = Duration.milliseconds(Int(seconds * 1_000))
        while ContinuousClock.now - started < limit, wraps || calls + batch <= count {
            let batchStart = ContinuousClock.now
            for _ in 0..<batch {
                body(calls % count)
                calls += 1
            }
            batches.append(ContinuousClock.now - batchStart)
        }
        let elapsed = ContinuousClock.now - started
        batches.sort()
        return Timing(
            calls: calls, meanMicros: micros(elapsed) / Double(calls),
            medianMicros: micros(batches[batches.count / 2]) / Double(batch),
            p99Micros: micros(batches[batches.count * 99 / 100]) / Double(batch),
            maxMicros: micros(batches[batches.count - 1]) / Double(batch))
    }

    struct Timing {
        let calls: Int
        let meanMicros: Double
        let medianMicros: Double
        let p99Micros: Double
        let maxMicros: Double
    }

    private static func micros(_ duration: Duration) -> Double { duration.seconds * 1e6 }
}
