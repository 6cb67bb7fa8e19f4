import HTTPTypes
import Hummingbird
import LatchkeyServer
import LatchkeyTestSupport
import ServiceLifecycle
import Testing

/// The management listener is one of the application's services and answers before the application has
/// checked the schema and bound its own port. Until that port listens, `/healthz` and `/readyz` say so.
@Suite struct ManagementListenerTests {
    @Test func healthAndReadinessAnswerStartingUntilTheServicePortListens() async throws {
        var settings = try await TestServiceSettings.make(
            ManagementPortSettingsTests.descriptor, kafkaBrokers: ServiceHealthExpectations.unreachableKafka)
        settings.port = ServiceProcess.freePort()
        let runtime = try ServiceRuntime(settings: settings, logger: TestServiceSettings.logger)
        var app = runtime.makeApplication(router: runtime.makeRouter(servesOpenAPIDocument: false))
        // Holds the service port closed until the test lets it open.
        let (opened, open) = AsyncStream<Void>.makeStream()
        app.beforeServerStarts {
            for await _ in opened { break }
        }
        let group = ServiceGroup(
            configuration: .init(services: [.init(service: app)], logger: TestServiceSettings.logger))
        let management = ManagementClient(settings)

        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            try await eventually("the management port answers", within: .seconds(60)) {
                (try? await management.execute(uri: "/healthz")) != nil
            }
            for path in ["/healthz", "/readyz"] {
                let response = try await management.execute(uri: path)
                #expect(response.status == .serviceUnavailable, "\(path)")
                #expect(response.text == #"{"status":"starting"}"#, "\(path)")
            }
            await #expect(throws: (any Error).self, "the service port is not open yet") {
                try await RawClient.connect(port: settings.port).close()
            }

            open.yield()
            try await eventually("/healthz turns 200", within: .seconds(60)) {
                try await management.execute(uri: "/healthz").status == .ok
            }
            // No retry: once /healthz is 200 the service port accepts connections.
            let client = try await RawClient.connect(port: settings.port)
            client.close()

            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }
}
