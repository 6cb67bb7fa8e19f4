import Foundation
import LatchkeyCore
import NIOHTTP1
import Synchronization

/// Pre-generated requests, each with its own fresh DPoP proof, handed out once each so that proof
/// generation never limits the load and no proof is ever replayed.
final class RequestPool: Sendable {
    let heads: [HTTPRequestHead]
    private let cursor = Atomic<Int>(0)

    /// Signs `count` proofs for `GET origin+path` bound to `token`, using every core available.
    init(count: Int, path: String, origin: String, host: String, token: String, signer: DPoPProofSigner) async throws {
        let workers = max(1, ProcessInfo.processInfo.activeProcessorCount)
        let slice = (count + workers - 1) / workers
        let url = origin + path
        let heads = try await withThrowingTaskGroup(of: (Int, [HTTPRequestHead]).self) { group in
            for worker in 0..<workers {
                group.addTask {
                    var heads: [HTTPRequestHead] = []
                    heads.reserveCapacity(slice)
                    for _ in 0..<min(slice, count - worker * slice) {
                        let proof = try signer.proof(method: "GET", url: url, accessToken: token)
                        heads.append(Self.head(path: path, host: host, token: token, proof: proof))
                    }
                    return (worker, heads)
                }
            }
            var parts = [[HTTPRequestHead]](repeating: [], count: workers)
            for try await (worker, part) in group { parts[worker] = part }
            return parts.flatMap { $0 }
        }
        self.heads = heads
    }

    static func head(path: String, host: String, token: String, proof: String) -> HTTPRequestHead {
        HTTPRequestHead(
            version: .http1_1, method: .GET, uri: path,
            headers: [
                "Host": host, "Authorization": "DPoP \(token)", "DPoP": proof,
            ])
    }

    /// The next unused request, or nil when the pool is exhausted.
    func next() -> HTTPRequestHead? {
        let index = cursor.wrappingAdd(1, ordering: .relaxed).oldValue
        return index < heads.count ? heads[index] : nil
    }

    var used: Int { min(cursor.load(ordering: .relaxed), heads.count) }
    var remaining: Int { heads.count - used }
}
