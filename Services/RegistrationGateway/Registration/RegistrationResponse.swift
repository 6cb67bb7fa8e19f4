import Foundation
import Hummingbird
import LatchkeyCore
import LatchkeyServer

/// The RFC 7591 §3.2.1 / RFC 7592 §3 client information response: the client's metadata with the
/// server's members beside it, `Cache-Control: no-store` (it may hold credentials).
struct RegistrationResponse: ResponseEncodable, Sendable {
    var record: ClientRecord
    /// Only on registration and secret rotation: the plaintext secret, shown once.
    var clientSecret: String?
    /// Only when issued or rotated.
    var registrationAccessToken: String?
    /// Nil where the client is not managed through RFC 7592 (the admin API's static clients).
    var registrationClientURI: String?
    /// The software statement as sent, echoed per RFC 7591 §3.2.1.
    var softwareStatement: String?

    enum CodingKeys: String, CodingKey {
        case clientID = "client_id"
        case clientIDIssuedAt = "client_id_issued_at"
        case clientSecret = "client_secret"
        case clientSecretExpiresAt = "client_secret_expires_at"
        case registrationAccessToken = "registration_access_token"
        case registrationClientURI = "registration_client_uri"
        case softwareStatement = "software_statement"
    }

    func encode(to encoder: any Encoder) throws {
        try record.metadata.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(record.clientID, forKey: .clientID)
        try container.encode(Int(record.createdAt.timeIntervalSince1970), forKey: .clientIDIssuedAt)
        if record.metadata.tokenEndpointAuthMethod?.usesClientSecret == true {
            try container.encode(record.clientSecretExpiresAtEpochSeconds, forKey: .clientSecretExpiresAt)
        }
        try container.encodeIfPresent(clientSecret, forKey: .clientSecret)
        try container.encodeIfPresent(registrationAccessToken, forKey: .registrationAccessToken)
        try container.encodeIfPresent(registrationClientURI, forKey: .registrationClientURI)
        try container.encodeIfPresent(softwareStatement, forKey: .softwareStatement)
    }
}
