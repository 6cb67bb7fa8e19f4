import Foundation
import LatchkeyCore

/// `GrantsLoad json-encoding [--seconds S]`: what writing a grant's event and a registration's event costs,
/// through `LatchkeyJSON.encode` and through Foundation's `JSONEncoder` with the same settings (the bytes
/// are the same: the product's tests compare them), median microseconds per event, in process.
enum JSONEncodingSpeed {
    static func run(seconds: Double) throws {
        let tenant = TenantSlug(rawValue: "bench")!
        let client = UUID().uuidString.lowercased()
        let user = UUID()
        let now = Date()
        let tokenIssued = CloudEvent(
            source: EventSource.tokenService,
            data: TokenIssued(
                tenant: tenant, clientID: client, userID: user, grantType: .authorizationCode, scope: "openid profile",
                jti: "at-" + UUID().uuidString, jkt: "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs",
                tokenTypes: [.access, .refresh, .id], expiresAt: now.addingTimeInterval(600),
                refreshExpiresAt: now.addingTimeInterval(86_400), refreshFamilyID: UUID().uuidString,
                audience: ["https://api.bench.example"], actor: .user(user)))
        let clientRegistered = CloudEvent(
            source: EventSource.registrationGateway,
            data: ClientRegistered(
                tenant: tenant, clientID: client, clientName: "Bench Mobile on Pixel 8", applicationType: .native,
                clientType: .confidential, tokenEndpointAuthMethod: .clientSecretBasic,
                grantTypes: [.authorizationCode, .refreshToken], redirectURIs: ["com.bench.mobile:/callback"],
                scope: "openid profile", softwareID: "bench-mobile", softwareVersion: "4.2.0",
                registrationMechanism: .initialAccessToken, dpopBoundAccessTokens: true,
                secretExpiresAt: now.addingTimeInterval(86_400 * 90), actor: .system("bench")))
        guard try LatchkeyJSON.encode(tokenIssued) == LatchkeyJSON.makeEncoder().encode(tokenIssued),
            try LatchkeyJSON.encode(clientRegistered) == LatchkeyJSON.makeEncoder().encode(clientRegistered)
        else { throw BenchmarkError("LatchkeyJSON.encode and JSONEncoder wrote different bytes") }

        try report("TokenIssued", tokenIssued, seconds: seconds)
        try report("ClientRegistered", clientRegistered, seconds: seconds)
    }

    static func report(_ label: String, _ event: some Encodable, seconds: Double) throws {
        let bytes = try LatchkeyJSON.encode(event).count
        let (compact, foundation) = try medianMicroseconds(seconds: seconds) {
            _ = try LatchkeyJSON.encode(event)
        } versus: {
            _ = try LatchkeyJSON.makeEncoder().encode(event)
        }
        print(
            "\(label) (\(bytes) bytes): LatchkeyJSON.encode \(String(format: "%.2f", compact)) µs, "
                + "JSONEncoder \(String(format: "%.2f", foundation)) µs (median per event)")
    }

    /// The median times of `first` and `second` in microseconds, over batches of 100 calls run for `seconds`.
    /// The batches alternate, so both see the same share of a machine whose load changes from second to second.
    static func medianMicroseconds(seconds: Double, _ first: () throws -> Void, versus second: () throws -> Void)
        throws -> (Double, Double)
    {
        var samples: ([Double], [Double]) = ([], [])
        let clock = ContinuousClock()
        func batch(_ body: () throws -> Void) throws -> Double {
            let start = clock.now
            for _ in 0..<100 { try body() }
            return (clock.now - start) / .microseconds(1) / 100
        }
        let end = clock.now + .milliseconds(Int(seconds * 1_000))
        while clock.now < end {
            samples.0.append(try batch(first))
            samples.1.append(try batch(second))
        }
        return (samples.0.sorted()[samples.0.count / 2], samples.1.sorted()[samples.1.count / 2])
    }
}
