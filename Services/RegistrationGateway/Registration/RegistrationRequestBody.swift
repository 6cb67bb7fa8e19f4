import Foundation
import Hummingbird
import LatchkeyCore
import LatchkeyServer

/// Reads and decodes a JSON client metadata body; every failure is an RFC-style 4xx.
struct RegistrationRequestBody: Sendable {
    /// RFC 7592 §2.2 credentials a PUT body carries next to the metadata.
    struct ClientCredentials: Sendable {
        var clientID: String?
        var clientSecret: String?
    }

    var metadata: ClientMetadata
    var credentials: ClientCredentials
    /// The body as canonical JSON (sorted members, one spelling per value): two bodies that mean the same
    /// are the same request for an `Idempotency-Key`.
    var canonical: String

    /// The body of `POST /register` and `PUT /register/{client_id}`: strict JSON (``JSONRequestBody``), every
    /// problem an `invalid_client_metadata` (RFC 7591 §3.2.2).
    static func read(_ request: Request) async throws -> RegistrationRequestBody {
        let bytes = try await jsonBytes(request)
        do throws(JSONRequestBody.Problem) {
            let body = try JSONRequestBody(bytes)
            // Trust that skips the consent page is an administrator's decision, never a registrant's claim.
            guard body.members["first_party"] == nil else {
                throw .invalidMember("first_party is set by an administrator only")
            }
            return RegistrationRequestBody(
                metadata: try body.decode(ClientMetadata.self),
                credentials: ClientCredentials(
                    clientID: try body.string("client_id"), clientSecret: try body.string("client_secret")),
                canonical: String(decoding: CanonicalJSON.encode(.object(body.members)), as: UTF8.self))
        } catch {
            throw RegistrationError.invalidMetadata(error.description)
        }
    }

    /// The bytes of an `application/json` body (bounded); another media type is 415.
    static func jsonBytes(_ request: Request) async throws -> [UInt8] {
        try requireJSON(request)
        return Array(try await request.body.collect(upTo: HTTPLimits.maximumBodySize).readableBytesView)
    }

    /// 415 unless the request declares `application/json`.
    static func requireJSON(_ request: Request) throws {
        guard let contentType = request.headers[.contentType],
            contentType.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
                == "application/json"
        else {
            throw OAuthError(.unsupportedMediaType, "invalid_request", "the request body must be application/json")
        }
    }
}
