import Foundation
import Logging
import Synchronization

@testable import LatchkeyCore
@testable import LatchkeyServer

/// Keys held in memory, counting lookups (stands in for a JWKS endpoint).
final class InMemoryKeySource: AccessTokenKeySource {
    private let keys: Mutex<[JWK]>
    private let lookups = Atomic<Int>(0)

    init(_ keys: [JWK]) { self.keys = Mutex(keys) }

    var lookupCount: Int { lookups.load(ordering: .relaxed) }

    func keys(issuer: String, kid: String?) async throws(AccessTokenError) -> [JWK] {
        lookups.add(1, ordering: .relaxed)
        let all = keys.withLock { $0 }
        return kid.map { kid in all.filter { $0.kid == kid } } ?? all
    }
}

/// Mints RFC 9068 tokens for the verifier tests.
struct TokenMinter {
    static let issuer = "https://auth.example.com/t/acme"
    static let audience = "https://api.example.com"
    let key: SigningKey
    let kid: String

    init(algorithm: JWSAlgorithm = .es256, kid: String = "k1") throws {
        key = try SigningKey.generate(algorithm)
        self.kid = kid
    }

    var jwk: JWK { key.publicJWK(kid: kid) }

    /// Claims as raw JSON members (so tests can send wrong types); `now` anchors iat/exp.
    func token(
        now: Int64, _ overrides: [String: Any] = [:], removing: [String] = [], typ: String? = "at+jwt",
        kid: String? = nil
    ) throws -> String {
        var claims: [String: Any] = [
            "iss": Self.issuer, "sub": "user-1", "aud": Self.audience, "exp": now + 300, "iat": now,
            "jti": UUID().uuidString, "client_id": "client-1", "scope": "orders:read", "cnf": ["jkt": "thumb"],
        ]
        for (name, value) in overrides { claims[name] = value }
        for name in removing { claims[name] = nil }
        let payload = try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])
        return try CompactJWS.sign(
            payload: payload, using: key, header: JWSHeaderParameters(typ: typ, kid: kid ?? self.kid))
    }
}

extension Logger {
    static let authTests: Logger = {
        var logger = Logger(label: "test.auth")
        logger.logLevel = .critical
        return logger
    }()
}
