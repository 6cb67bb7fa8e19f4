import Foundation
import LatchkeyCore
import Testing

@testable import DPoPVerifier

/// How long revoked clients and tokens are remembered: while a token they ended could still pass, and no longer.
@Suite struct RevocationRetentionTests {
    static let acme = TenantSlug(rawValue: "acme")!
    static let start = Date(timeIntervalSince1970: 1_700_000_000)
    static let retention = RevocationRetention(maxTokenLifetimeSeconds: 3_600, clockSkewSeconds: 10)

    func at(_ seconds: Double) -> Date { Self.start.addingTimeInterval(seconds) }

    @Test func aRevokedClientIsKeptUntilItsLastTokenExpiredPlusTheSkew() {
        let revocations = RevokedClients(loaded: true, retention: Self.retention)
        #expect(
            revocations.insert(
                tenant: Self.acme, clientID: "phone", revokedAt: at(0), tokensExpireAt: at(600), now: at(0)))
        #expect(
            !revocations.insert(
                tenant: Self.acme, clientID: "phone", revokedAt: at(0), tokensExpireAt: at(600), now: at(1)),
            "a replayed event is not new")
        revocations.sweep(now: at(609))
        #expect(
            revocations.contains(tenant: Self.acme, clientID: "phone"),
            "a token valid until 600 passes the check until 610")
        revocations.sweep(now: at(611))
        #expect(!revocations.contains(tenant: Self.acme, clientID: "phone"))
        #expect(revocations.count == 0)
    }

    @Test func withoutAnExpiryOrBeyondTheLongestLifetimeTheLongestLifetimeCounts() {
        let revocations = RevokedClients(loaded: true, retention: Self.retention)
        // An event of an older gateway, and one of a tenant whose tokens live longer than the sidecar accepts.
        revocations.insert(tenant: Self.acme, clientID: "old", revokedAt: at(0), tokensExpireAt: nil, now: at(0))
        revocations.insert(
            tenant: Self.acme, clientID: "long", revokedAt: at(0), tokensExpireAt: at(86_400 * 365), now: at(0))
        let until = 3_600.0 + Double(ClientRevoked.issuanceSlackSeconds) + 10
        revocations.sweep(now: at(until - 1))
        #expect(revocations.count == 2)
        revocations.sweep(now: at(until + 1))
        #expect(revocations.count == 0)
    }

    @Test func thePeriodicSweepDropsEveryPassedRevocationNotJustOneStep() async {
        let revocations = RevokedClients(loaded: true, retention: Self.retention)
        let total = 3 * ExpiringKeys.sweepBudget + 7
        for index in 0..<total {
            revocations.insert(
                tenant: Self.acme, clientID: "c\(index)", revokedAt: at(0), tokensExpireAt: at(600), now: at(0))
            revocations.insertToken(
                tenant: Self.acme, jti: "t\(index)", revokedAt: at(0), expiresAt: at(300), now: at(0))
        }
        #expect(revocations.count == total && revocations.revokedTokenCount == total)
        await revocations.sweepAll()  // now is long after `start`: every one of them is over
        #expect(revocations.count == 0 && revocations.revokedTokenCount == 0)
    }

    @Test func revocationsThatNoLongerMatterAreNotKeptAtAll() {
        let revocations = RevokedClients(loaded: true, retention: Self.retention)
        // Replayed at start-up long after: nothing is left to refuse.
        #expect(
            !revocations.insert(
                tenant: Self.acme, clientID: "gone", revokedAt: at(0), tokensExpireAt: at(600), now: at(700)))
        #expect(
            !revocations.insert(
                tenant: Self.acme, clientID: "older", revokedAt: at(0), tokensExpireAt: nil, now: at(86_400)))
        revocations.insertToken(tenant: Self.acme, jti: "t1", revokedAt: at(0), expiresAt: at(300), now: at(400))
        #expect(revocations.count == 0 && revocations.revokedTokenCount == 0)
        #expect(!revocations.contains(tenant: Self.acme, clientID: "gone"))
    }

    @Test func revokedTokensAreKeptUntilTheyExpiredPlusTheSkew() {
        let revocations = RevokedClients(loaded: true, retention: Self.retention)
        revocations.insertToken(tenant: Self.acme, jti: "t1", revokedAt: at(0), expiresAt: at(300), now: at(0))
        revocations.insertToken(tenant: Self.acme, jti: "t2", revokedAt: at(0), expiresAt: nil, now: at(0))
        revocations.sweep(now: at(309))
        #expect(revocations.containsToken(tenant: Self.acme, jti: "t1"), "the expiry check accepts it until 310")
        revocations.sweep(now: at(311))
        #expect(!revocations.containsToken(tenant: Self.acme, jti: "t1"))
        #expect(
            revocations.containsToken(tenant: Self.acme, jti: "t2"), "without an expiry the longest lifetime counts")
    }

    /// A register/delete loop at volume: the set holds what still matters, whatever has gone before.
    @Test func aHundredThousandRevocationsLeaveOnlyTheLiveOnes() {
        let revocations = RevokedClients(loaded: true, retention: Self.retention)
        for index in 0..<100_000 {
            let second = Double(index) / 100  // 100 a second for 1000 s
            revocations.insert(
                tenant: Self.acme, clientID: "loop-\(index)", revokedAt: at(second),
                tokensExpireAt: at(second + 60), now: at(second))
        }
        // Each lives 70 s, and each insert reclaims a few that have passed: only the live ones are held.
        #expect(revocations.count <= 7_100, "\(revocations.count)")
        revocations.sweep(now: at(1_000))
        #expect(revocations.count <= 7_000, "\(revocations.count)")
        // A sweep reclaims a bounded number (it runs on the event loop): a few of them empty the set.
        for _ in 0..<(7_000 / ExpiringKeys.sweepBudget + 1) { revocations.sweep(now: at(1_071)) }
        #expect(revocations.count == 0)
    }

    /// Users are disabled by an administrator, one entry per user however often: kept until enabled again.
    @Test func disabledUsersAreKeptUntilEnabled() {
        let revocations = RevokedClients(loaded: true, retention: Self.retention)
        let user = UUID()
        for _ in 0..<3 { revocations.setUser(tenant: Self.acme, userID: user, disabled: true) }
        revocations.sweep(now: at(86_400 * 365))
        #expect(revocations.disabledUserCount == 1)
        #expect(revocations.isUserDisabled(tenant: Self.acme, subject: user.uuidString.lowercased()))
        revocations.setUser(tenant: Self.acme, userID: user, disabled: false)
        #expect(revocations.disabledUserCount == 0)
    }
}
