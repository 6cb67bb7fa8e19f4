import LatchkeyCore

/// A static client as the admin API creates it: RFC 7591 metadata plus `first_party`.
enum ClientSpecification {
    /// Members of a stored client that belong to that one client, not to its specification: never exported,
    /// never compared.
    static let instanceMembers: Set<String> = [
        "client_id", "client_id_issued_at", "client_secret", "client_secret_expires_at", "registration_access_token",
        "registration_client_uri", "status", "authenticated_user",
    ]

    /// The specification of a stored client (`GET …/clients/{id}`).
    static func of(_ stored: JSONValue) -> JSONValue {
        .object((stored.objectValue ?? [:]).filter { !instanceMembers.contains($0.key) })
    }

    /// A confidential client-credentials client with scope `admin`.
    static func adminClient(name: String) -> JSONValue {
        [
            "client_name": .string(name), "grant_types": ["client_credentials"], "response_types": [],
            "application_type": "web", "token_endpoint_auth_method": "client_secret_basic", "scope": "admin",
        ]
    }
}
