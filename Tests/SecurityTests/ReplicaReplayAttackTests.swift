import Foundation
import LatchkeyCore
import LatchkeyTestSupport
import NIOHTTP1
import Testing

@testable import LatchkeyCLI

/// With `DPOP_REPLAY_STORE=postgres`, a DPoP proof used at one token-service replica is refused at every
/// other replica on the same database.
@Suite struct ReplicaReplayAttackTests {
    @Test func aProofReplayedToAnotherReplicaIsRefused() async throws {
        try await SeededPlatform.run(settings: ["DPOP_REPLAY_STORE": "postgres"]) { platform in
            let second = try ServiceProcess("token-service", environment: platform.processes.environment)
            do {
                guard await second.waitUntilHealthy(timeout: .seconds(60)) else {
                    throw TestFailure("the second replica did not start: \(second.capturedOutput().suffix(2_000))")
                }
                let admin = try await platform.adminToken()
                let client = try await platform.createClient(
                    #"{"client_name":"Batch","grant_types":["client_credentials"],"response_types":[],"application_type":"web","token_endpoint_auth_method":"client_secret_basic","scope":"orders:read"}"#,
                    adminToken: admin)
                let basic = platform.basic(
                    client.json["client_id"] as? String ?? "", client.json["client_secret"] as? String ?? "")
                let key = DPoPProofSigner(key: try SigningKey.generate(.es256))
                // Both replicas compute `htu` from the same public URL, so one proof is valid at either.
                let proof = try key.proof(method: "POST", url: platform.endpoints.tokenEndpoint)
                let form = [("grant_type", "client_credentials"), ("scope", "orders:read")]
                let first = try await platform.http.postForm(
                    platform.endpoints.tokenEndpoint, form, headers: basic + [("DPoP", proof)])
                #expect(first.status == 200, "\(first.body.prefix(200))")
                #expect(first.json["token_type"] as? String == "DPoP")

                let secondReplica = "http://127.0.0.1:\(second.port)/t/demo/token"
                let replayed = try await platform.http.postForm(secondReplica, form, headers: basic + [("DPoP", proof)])
                #expect(replayed.status == 400, "the other replica accepted a replayed proof: \(replayed.status)")
                #expect(replayed.json["error"] as? String == "invalid_dpop_proof")
                let fresh = try await platform.http.postForm(
                    secondReplica, form,
                    headers: basic + [("DPoP", try key.proof(method: "POST", url: platform.endpoints.tokenEndpoint))])
                #expect(fresh.status == 200, "control: a fresh proof at the second replica: \(fresh.status)")
            } catch {
                _ = await second.stop()
                throw error
            }
            _ = await second.stop()
        }
    }
}
