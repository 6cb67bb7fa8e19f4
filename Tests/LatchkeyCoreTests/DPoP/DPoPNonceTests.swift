import Crypto
import Foundation
import Testing

@testable import LatchkeyCore

@Suite("DPoPNonce")
struct DPoPNonceTests {
    let secret = SymmetricKey(size: .bits256)

    @Test func currentAndPreviousStepAreAccepted() throws {
        let clock = FixedWallClock(unixSeconds: 1_763_800_000)
        let source = try HMACDPoPNonceSource(secret: secret, stepSeconds: 300, clock: clock)
        let nonce = source.currentNonce()
        #expect(nonce.count == 32)
        #expect(source.isValid(nonce))
        clock.advance(by: 300)
        #expect(source.isValid(nonce), "previous step still accepted")
        #expect(source.currentNonce() != nonce, "rotated")
        clock.advance(by: 300)
        #expect(!source.isValid(nonce), "two steps old is expired")
    }

    @Test func futureNoncesAreRejected() throws {
        let clock = FixedWallClock(unixSeconds: 1_763_800_000)
        let source = try HMACDPoPNonceSource(secret: secret, clock: clock)
        let future = source.nonce(forStep: source.currentStep() + 1)
        #expect(!source.isValid(future))
    }

    @Test func replicasWithTheSameSecretAgree() throws {
        let clock = FixedWallClock(unixSeconds: 1_763_800_000)
        let a = try HMACDPoPNonceSource(secret: secret, clock: clock)
        let b = try HMACDPoPNonceSource(secret: secret, clock: clock)
        let other = try HMACDPoPNonceSource(secret: SymmetricKey(size: .bits256), clock: clock)
        #expect(a.currentNonce() == b.currentNonce())
        #expect(b.isValid(a.currentNonce()))
        #expect(!other.isValid(a.currentNonce()))
    }

    @Test func forgedAndMalformedNoncesAreRejected() throws {
        let clock = FixedWallClock(unixSeconds: 1_763_800_000)
        let source = try HMACDPoPNonceSource(secret: secret, clock: clock)
        var bytes = try #require(Base64URL.decode(source.currentNonce()))
        bytes[bytes.count - 1] ^= 1
        #expect(!source.isValid(Base64URL.encode(bytes)))
        for bad in [
            "", "n-123", String(repeating: "A", count: 32), source.currentNonce() + "A",
            "====" + source.currentNonce().dropFirst(4),
        ] {
            #expect(!source.isValid(bad))
        }
    }

    @Test func secretMustBeLongEnough() {
        #expect(throws: KeyMaterial.Failure.self) { try HMACDPoPNonceSource(secret: SymmetricKey(size: .bits128)) }
        #expect(throws: Never.self) { try HMACDPoPNonceSource(configuration: KeyMaterial.generateConfigurationValue()) }
    }
}
