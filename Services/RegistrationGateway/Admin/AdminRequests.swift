import Foundation
import Hummingbird
import LatchkeyCore
import LatchkeyServer

/// `POST /admin/tenants` (its `policy` member is read by `TenantPolicy.parse`).
struct CreateTenantRequest: Decodable, Sendable {
    var tenantID: String
    var displayName: String?
    enum CodingKeys: String, CodingKey {
        case tenantID = "tenant_id"
        case displayName = "display_name"
    }

    /// The request in `body` and the tenant it creates; a malformed body or tenant id is a 400.
    static func parse(_ body: JSONRequestBody) throws -> (CreateTenantRequest, TenantSlug) {
        let request = try AdminBody.decode(CreateTenantRequest.self, from: body)
        guard let slug = TenantSlug(rawValue: request.tenantID) else {
            throw OAuthError.invalidRequest(
                "tenant_id must be 1–63 characters of a-z, 0-9 and '-', starting with a letter or digit")
        }
        return (request, slug)
    }

    /// The tenant a creation acts on, named in the body rather than the path. The body is checked before
    /// the caller (a malformed one is a 400 whoever sends it) and stays buffered for the handler.
    static let tenant: AdminAuthMiddleware.TenantLocator = { request, _ in
        _ = try await request.collectBody(upTo: HTTPLimits.maximumBodySize)
        return try parse(try await AdminBody.read(request)).1
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
/// `POST /admin/tenants/{t}/users/{id}/password`.
struct ResetPasswordRequest: Decodable, Sendable {
    var password: String
}

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

/// Admin request bodies: required (every change is asked for explicitly), JSON only, size-bounded and
/// strict (``JSONRequestBody``); every problem is a 400 `invalid_request`.
enum AdminBody {
    static func read(_ request: Request) async throws -> JSONRequestBody {
        let bytes = Array(try await request.body.collect(upTo: HTTPLimits.maximumBodySize).readableBytesView)
        // Checked before the media type: a missing body is the mistake to name, whatever the header says.
        guard !bytes.isEmpty else { throw OAuthError.invalidRequest(JSONRequestBody.Problem.empty.description) }
        try RegistrationRequestBody.requireJSON(request)
        return try checked { () throws(JSONRequestBody.Problem) in try JSONRequestBody(bytes) }
    }

    static func read<T: Decodable>(_ type: T.Type, from request: Request) async throws -> T {
        try decode(type, from: try await read(request))
    }

    static func decode<T: Decodable>(_ type: T.Type, from body: JSONRequestBody) throws(OAuthError) -> T {
        try checked { () throws(JSONRequestBody.Problem) in try body.decode(type) }
    }

    /// Runs `work` on a body, its problems answered as 400 `invalid_request`.
    static func checked<T>(_ work: () throws(JSONRequestBody.Problem) -> T) throws(OAuthError) -> T {
        do { return try work() } catch { throw OAuthError.invalidRequest(error.description) }
    }
}
