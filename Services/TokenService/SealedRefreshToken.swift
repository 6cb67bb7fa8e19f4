import Foundation
import LatchkeyCore

/// What a refresh token is issued with, sealed into the token itself so its usual rotation needs no read of the
/// token's row: the row stays the record of the token's status (active, rotated, revoked), which the rotation's
/// statement checks. The expiry is whole seconds.
struct RefreshTokenContents: Sendable, Equatable {
    var familyID: UUID
    var generation: Int
    var userID: UUID?
    var scope: String
    var dpopJKT: String?
    var expiresAt: Date
}

/// Seals and opens refresh tokens (``TokenSealer``, key derived from `SECRET_HASH_KEY`). The tenant and the
/// client are the associated data: a token opens only when presented by its client at its tenant.
struct RefreshTokenSealer: Sendable {
    private let sealer: TokenSealer

    init(hasher: KeyedHasher) {
        sealer = TokenSealer(key: hasher.deriveKey("latchkey/token-service/refresh-token/v1"))
    }

    /// A new token, or with `successorOf` the one successor of that token for these contents: sealing them again
    /// gives the same token, so a retried rotation can be answered with the successor it already created.
    /// Nil when a field is too long to seal.
    func seal(_ contents: RefreshTokenContents, tenant: String, clientID: String, successorOf: String? = nil)
        -> String?
    {
        var fields = SealedFields()
        fields.append(contents.familyID)
        fields.append(Int64(contents.generation))
        fields.append(Int64(contents.expiresAt.timeIntervalSince1970.rounded(.down)))
        fields.append(UInt8(contents.userID == nil ? 0 : 1))
        if let userID = contents.userID { fields.append(userID) }
        guard fields.append(contents.scope), fields.append(contents.dpopJKT),
            let associated = associatedData(tenant: tenant, clientID: clientID)
        else { return nil }
        return try? sealer.seal(
            fields.bytes, associatedData: associated, derivedFrom: successorOf.map { Array($0.utf8) })
    }

    /// The contents, or nil when `token` is not a sealed refresh token of this client at this tenant.
    func open(_ token: String, tenant: String, clientID: String) -> RefreshTokenContents? {
        guard let associated = associatedData(tenant: tenant, clientID: clientID),
            let plaintext = sealer.open(token, associatedData: associated)
        else { return nil }
        var reader = SealedFieldsReader(plaintext)
        guard let familyID = reader.uuid(), let generation = reader.int64(), let expiresAt = reader.int64(),
            let hasUser = reader.uint8(), hasUser <= 1
        else { return nil }
        var userID: UUID?
        if hasUser == 1 {
            guard let id = reader.uuid() else { return nil }
            userID = id
        }
        guard let scope = reader.string(), let scope, let dpopJKT = reader.string(), reader.isAtEnd,
            let generation = Int(exactly: generation)
        else { return nil }
        return RefreshTokenContents(
            familyID: familyID, generation: generation, userID: userID, scope: scope, dpopJKT: dpopJKT,
            expiresAt: Date(timeIntervalSince1970: TimeInterval(expiresAt)))
    }

    private func associatedData(tenant: String, clientID: String) -> [UInt8]? {
        SealedFields(strings: ["refresh_token", tenant, clientID])?.bytes
    }
}
