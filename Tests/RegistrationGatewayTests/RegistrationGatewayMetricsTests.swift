import Foundation
import HTTPTypes
import HummingbirdTesting
import LatchkeyKafka
import LatchkeyServer
import LatchkeyTestSupport
import Testing

@testable import RegistrationGateway

/// The registration and revocation counters on the management port move with real requests (each test has
/// its own tenant, so its series are its own although the registry is shared by the process).
@Suite struct RegistrationGatewayMetricsTests {
    @Test func registrationsAreCountedByOutcomeAndDeregistrationsAsClientRevocations() async throws {
        let h = try await GatewayHarness.make()
        let token = try await h.dcrToken()
        let settings = try await TestServiceSettings.make(
            .registrationGateway, kafkaBrokers: GatewayHarness.sharedCluster.bootstrapServers)
        let app = try buildApplication(
            settings: settings, gateway: GatewayHarness.gatewaySettings(), logger: TestServiceSettings.logger)
        try await app.journaledTest(.router) { client in
            let created = try await client.send(
                .post, "/t/\(h.tenant)/register", token: token, json: RegistrationEndpointTests.native)
            #expect(created.status == .created)
            let badRedirect = try await client.send(
                .post, "/t/\(h.tenant)/register", token: token,
                json: #"{"redirect_uris":["myapp:/cb"]}"#)
            #expect(badRedirect.errorCode == "invalid_redirect_uri")
            let badToken = try await client.send(
                .post, "/t/\(h.tenant)/register", token: "not-a-token", json: RegistrationEndpointTests.native)
            #expect(badToken.errorCode == "invalid_token")
            let clientID = try #require(created.json["client_id"] as? String)
            let registrationToken = try #require(created.json["registration_access_token"] as? String)
            let deleted = try await client.send(
                .delete, "/t/\(h.tenant)/register/\(clientID)", token: registrationToken)
            #expect(deleted.status == .noContent)

            let text = try await ManagementClient(settings).execute(uri: "/metrics").text
            func registrations(_ outcome: String) -> Double? {
                PrometheusText.value(
                    text, #"latchkey_registrations_total{tenant="\#(h.tenant)",outcome="\#(outcome)"}"#)
            }
            #expect(registrations("registered") == 1)
            #expect(registrations("invalid_redirect_uri") == 1)
            #expect(registrations("invalid_token") == 1)
            #expect(
                PrometheusText.value(
                    text, #"latchkey_revocations_total{tenant="\#(h.tenant)",kind="client",reason="deregistered"}"#)
                    == 1)
        }
    }
}
