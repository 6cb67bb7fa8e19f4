import Foundation
import Hummingbird
import LatchkeyCore
import LatchkeyServer

/// `POST /admin/tenants`.
struct CreateTenantRequest: Decodable, Sendable {
    var tenantID: String
    var displayName: String?
    var policy: JSONValue?
    enum CodingKeys: String, CodingKey {
        case tenantID = "tenant_id"
        case displayName = "display_name"
        case policy
    }
}

/// `POST …/clients`: the members beside the RFC 7591 metadata that only an administrator sets.
struct AdminClientOptions: Decodable, Sendable {
    /// The tenant's own app: its signed-in users are not asked to consent (defaults to false).
    var firstParty: Bool?
    enum CodingKeys: String, CodingKey {
        case firstParty = "first_party"
    }
}

/// `POST …/clients/{client_id}/revoke`.
struct RevokeClientRequest: Decodable, Sendable {
    /// Free text recorded in `ClientRevoked.reason_detail` ("device stolen").
    var reason: String?
}

/// `POST|PUT …/templates`.
struct TemplateRequest: Decodable, Sendable {
    var softwareID: String?
    var metadata: ClientMetadata
    var overridableFields: [String]?
    enum CodingKeys: String, CodingKey {
        case softwareID = "software_id"
        case metadata
        case overridableFields = "overridable_fields"
    }
}

/// `POST …/users`: an account created by an administrator (e.g. a demo or service user).
struct CreateUserRequest: Decodable, Sendable {
    var username: String
    var email: String?
    var password: String
    /// The administrator vouches for the address; default false.
    var emailVerified: Bool?

    enum CodingKeys: String, CodingKey {
        case username, email, password
        case emailVerified = "email_verified"
    }
}

/// `POST …/initial-access-tokens`.
struct InitialAccessTokenRequest: Decodable, Sendable {
    var uses: Int?
    var expiresIn: Int?
    var description: String?
    enum CodingKeys: String, CodingKey {
        case uses
        case expiresIn = "expires_in"
        case description
    }
}

/// Admin request bodies: JSON only, size-bounded, decode failures as 400 `invalid_request`.
enum AdminBody {
    static func read<T: Decodable>(_ type: T.Type, from request: Request) async throws -> T {
        try decode(type, from: try await RegistrationRequestBody.jsonData(request))
    }

    static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        guard !JSONNULCheck.containsNUL(data) else {
            throw OAuthError.invalidRequest("the request body must not contain U+0000 characters")
        }
        do {
            return try LatchkeyJSON.decode(type, from: data)
        } catch let error as DecodingError {
            throw OAuthError.invalidRequest(error.readableDescription)
        } catch {
            throw OAuthError.invalidRequest("the request body is not a valid JSON object")
        }
    }

    /// A JSON response that may carry a credential shown once, so never cached.
    static func response(_ object: [String: Any], status: HTTPResponse.Status = .ok) throws -> Response {
        response(json: try json(object), status: status)
    }

    static func response(json data: Data, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func json(_ object: [String: Any]) throws -> Data {
        try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
    }

    /// A Codable value as a JSON object.
    static func object<T: Encodable>(_ value: T) throws -> Any {
        try JSONSerialization.jsonObject(with: LatchkeyJSON.encode(value))
    }
}
