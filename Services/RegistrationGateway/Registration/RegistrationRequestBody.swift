import Foundation
import Hummingbird
import LatchkeyCore
import LatchkeyServer

/// Reads and decodes a JSON client metadata body; every failure is an RFC-style 4xx.
struct RegistrationRequestBody: Sendable {
    /// RFC 7592 §2.2 credentials a PUT body carries next to the metadata.
    struct ClientCredentials: Decodable, Sendable {
        var clientID: String?
        var clientSecret: String?
        enum CodingKeys: String, CodingKey {
            case clientID = "client_id"
            case clientSecret = "client_secret"
        }
    }

    var metadata: ClientMetadata
    var credentials: ClientCredentials

    static func read(_ request: Request) async throws -> RegistrationRequestBody {
        let data = try await jsonData(request)
        guard !JSONNULCheck.containsNUL(data) else {
            throw RegistrationError.invalidMetadata("the request body must not contain U+0000 characters")
        }
        let body = RegistrationRequestBody(
            metadata: try decode(ClientMetadata.self, from: data), credentials: try decode(ClientCredentials.self, from: data))
        // Trust that skips the consent page is an administrator's decision, never a registrant's claim.
        if try decode(AdminClientOptions.self, from: data).firstParty != nil {
            throw RegistrationError.invalidMetadata("first_party is set by an administrator only")
        }
        return body
    }

    /// The bytes of an `application/json` body (bounded); another media type is 415. Callers refuse
    /// U+0000 (`JSONNULCheck`) with their own error code before decoding.
    static func jsonData(_ request: Request) async throws -> Data {
        try requireJSON(request)
        return Data(try await request.body.collect(upTo: HTTPLimits.maximumBodySize).readableBytesView)
    }

    /// 415 unless the request declares `application/json`.
    static func requireJSON(_ request: Request) throws {
        guard let contentType = request.headers[.contentType],
              contentType.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() == "application/json"
        else {
            throw OAuthError(.unsupportedMediaType, "invalid_request", "the request body must be application/json")
        }
    }

    private static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        do {
            return try LatchkeyJSON.decode(type, from: data)
        } catch let error as DecodingError {
            if case .dataCorrupted(let context) = error, context.codingPath.isEmpty {
                throw RegistrationError.invalidMetadata("the request body is not a valid JSON object")
            }
            if case .typeMismatch(_, let context) = error, context.codingPath.isEmpty {
                throw RegistrationError.invalidMetadata("the request body must be a JSON object")
            }
            throw RegistrationError.invalidMetadata(error.readableDescription)
        } catch {
            throw RegistrationError.invalidMetadata("the request body is not a valid JSON object")
        }
    }
}
