import Foundation
import Hummingbird
import LatchkeyCore

/// The RFC 7591 §3.2.1 / RFC 7592 §3 client information response.
struct RegistrationResponse: Sendable {
    var record: ClientRecord
    /// Only on registration and secret rotation: the plaintext secret, shown once.
    var clientSecret: String?
    /// Only when issued or rotated.
    var registrationAccessToken: String?
    var registrationClientURI: String
    /// The software statement as sent, echoed per RFC 7591 §3.2.1.
    var softwareStatement: String?

    func jsonObject() throws -> [String: Any] {
        let metadata = try LatchkeyJSON.encode(record.metadata)
        var object = (try JSONSerialization.jsonObject(with: metadata) as? [String: Any]) ?? [:]
        object["client_id"] = record.clientID
        object["client_id_issued_at"] = Int(record.createdAt.timeIntervalSince1970)
        if record.metadata.tokenEndpointAuthMethod?.usesClientSecret == true {
            object["client_secret_expires_at"] = record.clientSecretExpiresAtEpochSeconds
        }
        if let clientSecret { object["client_secret"] = clientSecret }
        if let registrationAccessToken { object["registration_access_token"] = registrationAccessToken }
        object["registration_client_uri"] = registrationClientURI
        if let softwareStatement { object["software_statement"] = softwareStatement }
        return object
    }

    /// JSON with `Cache-Control: no-store` (the body may hold credentials).
    func response(status: HTTPResponse.Status) throws -> Response {
        let data = try JSONSerialization.data(withJSONObject: try jsonObject(), options: [.sortedKeys, .withoutEscapingSlashes])
        return Response(
            status: status,
            headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
