import Foundation
import Testing

@testable import LatchkeyCore

@Suite("PKCE")
struct PKCETests {
    @Test func rfc7636AppendixB() throws {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
        #expect(PKCE.s256Challenge(for: verifier) == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
        try PKCE.verify(verifier: verifier, challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", method: .s256)
    }

    @Test func verifierSyntax() {
        #expect(PKCE.isValidVerifier(String(repeating: "a", count: 43)))
        #expect(PKCE.isValidVerifier(String(repeating: "~", count: 128)))
        #expect(PKCE.isValidVerifier("AZaz09-._~" + String(repeating: "x", count: 33)))
        #expect(!PKCE.isValidVerifier(String(repeating: "a", count: 42)))
        #expect(!PKCE.isValidVerifier(String(repeating: "a", count: 129)))
        for bad in ["+", "/", "=", " ", "é", "%", "\n"] {
            #expect(!PKCE.isValidVerifier(String(repeating: "a", count: 42) + bad), "\(bad)")
        }
    }

    @Test func mismatchAndSyntaxFailures() {
        let verifier = PKCE.generateVerifier()
        #expect(verifier.count == 43)
        let challenge = PKCE.s256Challenge(for: verifier)
        #expect(PKCE.isValidChallenge(challenge))
        #expect(PKCE.matches(verifier: verifier, challenge: challenge, method: .s256))
        #expect(throws: PKCE.Failure.mismatch) {
            try PKCE.verify(verifier: PKCE.generateVerifier(), challenge: challenge, method: .s256)
        }
        #expect(throws: PKCE.Failure.invalidVerifierSyntax) {
            try PKCE.verify(verifier: "short", challenge: challenge, method: .s256)
        }
        // The challenge itself is not a valid verifier for S256.
        #expect(!PKCE.matches(verifier: challenge, challenge: challenge, method: .s256))
    }

    @Test func plainOnlyWhenExplicitlyAllowed() throws {
        let verifier = PKCE.generateVerifier()
        #expect(throws: PKCE.Failure.plainNotAllowed) {
            try PKCE.verify(verifier: verifier, challenge: verifier, method: .plain)
        }
        try PKCE.verify(verifier: verifier, challenge: verifier, method: .plain, allowPlain: true)
        #expect(!PKCE.matches(verifier: verifier, challenge: verifier + "x", method: .plain, allowPlain: true))
    }

    @Test func methodParsingIsCaseSensitive() {
        #expect(PKCE.Method(rawValue: "S256") == .s256)
        #expect(PKCE.Method(rawValue: "plain") == .plain)
        #expect(PKCE.Method(rawValue: "s256") == nil)
        #expect(PKCE.Method(rawValue: "PLAIN") == nil)
    }
}
