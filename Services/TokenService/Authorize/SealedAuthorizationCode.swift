import Foundation
import LatchkeyCore

/// What an authorization code is issued with, sealed into the code itself so its usual redemption needs no
/// read of the code's row: the row stays the record of the code's single use (and of what it issued, for a
/// replay). Times are whole seconds.
struct AuthorizationCodeContents: Sendable, Equatable {
    var userID: UUID
    var scope: String
    var challenge: String?
    var challengeMethod: String?
    var nonce: String?
    var dpopJKT: String?
    var authTime: Date
    var expiresAt: Date
}

/// Seals and opens authorization codes (``TokenSealer``, key derived from `SECRET_HASH_KEY`). The tenant, the
/// client and the redirect URI are the associated data: a code opens only when redeemed by the client it was
/// issued to, with the redirect URI it was issued for, at its tenant.
struct AuthorizationCodeSealer: Sendable {
    private let sealer: TokenSealer

    init(hasher: KeyedHasher) {
        sealer = TokenSealer(key: hasher.deriveKey("latchkey/token-service/authorization-code/v1"))
    }

    /// The code, or nil when a field is too long to seal (the caller then issues a random code).
    func seal(_ contents: AuthorizationCodeContents, tenant: String, clientID: String, redirectURI: String) -> String? {
        var fields = SealedFields()
        fields.append(contents.userID)
        fields.append(Int64(contents.authTime.timeIntervalSince1970.rounded(.down)))
        fields.append(Int64(contents.expiresAt.timeIntervalSince1970.rounded(.down)))
        for value in [contents.scope, contents.challenge, contents.challengeMethod, contents.nonce, contents.dpopJKT] {
            guard fields.append(value) else { return nil }
        }
        guard let associated = associatedData(tenant: tenant, clientID: clientID, redirectURI: redirectURI) else {
            return nil
        }
        return try? sealer.seal(fields.bytes, associatedData: associated)
    }

    /// The contents, or nil when `code` is not a sealed code, or not one issued to this client for this
    /// redirect URI at this tenant.
    func open(_ code: String, tenant: String, clientID: String, redirectURI: String) -> AuthorizationCodeContents? {
        guard let associated = associatedData(tenant: tenant, clientID: clientID, redirectURI: redirectURI),
            let plaintext = sealer.open(code, associatedData: associated)
        else { return nil }
        var reader = SealedFieldsReader(plaintext)
        guard let userID = reader.uuid(), let authTime = reader.int64(), let expiresAt = reader.int64(),
            let scope = reader.string(), let scope, let challenge = reader.string(),
            let challengeMethod = reader.string(), let nonce = reader.string(), let dpopJKT = reader.string(),
            reader.isAtEnd
        else { return nil }
        return AuthorizationCodeContents(
            userID: userID, scope: scope, challenge: challenge, challengeMethod: challengeMethod, nonce: nonce,
            dpopJKT: dpopJKT, authTime: Date(timeIntervalSince1970: TimeInterval(authTime)),
            expiresAt: Date(timeIntervalSince1970: TimeInterval(expiresAt)))
    }

    private func associatedData(tenant: String, clientID: String, redirectURI: String) -> [UInt8]? {
        SealedFields(strings: ["authorization_code", tenant, clientID, redirectURI])?.bytes
    }
}

extension Date {
    /// `seconds` from now, in whole seconds: sealed codes and refresh tokens carry their times so, and their rows
    /// get the same value.
    static func wholeSeconds(fromNow seconds: Int) -> Date {
        Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + TimeInterval(seconds)).rounded(.down))
    }
}
