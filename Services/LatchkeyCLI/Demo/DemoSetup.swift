import Foundation

/// Where the four services listen (their public URLs).
struct DemoEndpoints: Codable, Sendable {
    var gateway = "http://127.0.0.1:8081"
    var tokenService = "http://127.0.0.1:8082"
    var sidecar = "http://127.0.0.1:8083"
    var audit = "http://127.0.0.1:8084"
    var tenant = "demo"

    var issuer: String { "\(tokenService)/t/\(tenant)" }
    var tokenEndpoint: String { "\(issuer)/token" }
}

/// What `latchkey demo seed` created and `latchkey demo run` needs.
struct DemoCredentials: Codable, Sendable {
    var adminClientID: String
    var adminClientSecret: String
    var dcrClientID: String
    var templateID: String
    var username: String
    var password: String
}

/// The demo failed: a step did not get the answer the story expects.
struct DemoFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Seeds a demo tenant through the public admin API, as an operator would: the bootstrap key creates
/// the tenant and its admin client; the admin client's token does the rest.
struct DemoSeeder {
    static let dcrRedirectURI = "com.latchkey.demo:/oauth"
    static let instanceScope = "openid orders:read orders:write offline_access"

    let http: DemoHTTP
    let endpoints: DemoEndpoints
    let bootstrapKey: String

    func seed() async throws -> DemoCredentials {
        let admin = "/admin/tenants/\(endpoints.tenant)"
        let policy =
            #"{"registration_mechanisms":["user_token","initial_access_token"],"allowed_scopes":["openid","profile","offline_access","orders:read","orders:write"],"branding":{"name":"Latchkey Demo"},"self_signup":true}"#
        try expect(
            try await http.postJSON(
                "\(endpoints.gateway)/admin/tenants",
                #"{"tenant_id":"\#(endpoints.tenant)","display_name":"Latchkey Demo","policy":\#(policy)}"#,
                headers: bearer(bootstrapKey)), 201, "create the demo tenant")
        let adminClient = try expect(
            try await http.postJSON(
                "\(endpoints.gateway)\(admin)/clients",
                #"{"client_name":"Demo administrator","grant_types":["client_credentials"],"response_types":[],"application_type":"web","token_endpoint_auth_method":"client_secret_basic","scope":"admin"}"#,
                headers: bearer(bootstrapKey)), 201, "create the admin client")
        guard let adminID = adminClient.json["client_id"] as? String,
            let adminSecret = adminClient.json["client_secret"] as? String
        else {
            throw DemoFailure("the admin client came back without credentials")
        }
        let token = try await DemoSeeder.adminToken(http, endpoints, clientID: adminID, secret: adminSecret)
        // The tenant's own app: signing in to it for a DCR token shows no consent page. It may also ask for
        // `account` (in an authorization of its own) to show the user their devices.
        let dcr = try expect(
            try await http.postJSON(
                "\(endpoints.gateway)\(admin)/clients",
                #"{"client_name":"Demo mobile app (registration)","redirect_uris":["\#(Self.dcrRedirectURI)"],"token_endpoint_auth_method":"none","grant_types":["authorization_code"],"scope":"dcr account","first_party":true}"#,
                headers: bearer(token)), 201, "create the static DCR client")
        try expect(
            try await http.postJSON(
                "\(endpoints.gateway)\(admin)/templates",
                #"{"software_id":"demo-mobile","metadata":{"client_name":"Demo mobile","redirect_uris":["\#(Self.dcrRedirectURI)"],"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],"scope":"\#(Self.instanceScope)","dpop_bound_access_tokens":true},"overridable_fields":["client_name"]}"#,
                headers: bearer(token)), 201, "create the demo-mobile template")
        let password = "demo-" + UUID().uuidString.lowercased().prefix(13)
        try expect(
            try await http.postJSON(
                "\(endpoints.gateway)\(admin)/users",
                #"{"username":"demo","email":"demo@example.com","password":"\#(password)"}"#,
                headers: bearer(token)), 201, "create the demo user")
        return DemoCredentials(
            adminClientID: adminID, adminClientSecret: adminSecret, dcrClientID: dcr.json["client_id"] as? String ?? "",
            templateID: "demo-mobile", username: "demo", password: password)
    }

    /// A client-credentials token with scope `admin`.
    static func adminToken(_ http: DemoHTTP, _ endpoints: DemoEndpoints, clientID: String, secret: String) async throws
        -> String
    {
        let basic = Data("\(clientID):\(secret)".utf8).base64EncodedString()
        let response = try await http.postForm(
            endpoints.tokenEndpoint, [("grant_type", "client_credentials"), ("scope", "admin")],
            headers: [("Authorization", "Basic \(basic)")])
        guard response.status == 200, let token = response.json["access_token"] as? String else {
            throw DemoFailure("admin token: \(response.status) \(response.body.prefix(300))")
        }
        return token
    }

    private func bearer(_ token: String) -> [(String, String)] { [("Authorization", "Bearer \(token)")] }
}

/// Fails the demo when `response` does not have `status`.
@discardableResult
func expect(_ response: DemoResponse, _ status: Int, _ what: String) throws -> DemoResponse {
    guard response.status == status else {
        throw DemoFailure("\(what): expected \(status), got \(response.status) \(response.body.prefix(400))")
    }
    return response
}

/// Fails the demo when a value the story needs is missing from an answer.
func required<T>(_ value: T?, _ what: String) throws -> T {
    guard let value else { throw DemoFailure("missing \(what)") }
    return value
}
