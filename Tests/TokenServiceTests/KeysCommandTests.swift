import Foundation
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyTestSupport
import Testing

/// `latchkey keys list|rotate` as an operator runs it, against the test database.
@Suite struct KeysCommandTests {
    /// Runs the built `latchkey` with `arguments` and exactly `environment`; returns exit status and output.
    static func latchkey(_ arguments: [String], environment: [String: String]) async throws -> (Int32?, String) {
        let child = try ChildProcess(
            executable: ServiceProcess.binaryFolder.appendingPathComponent("latchkey").path, arguments: arguments,
            environment: environment)
        let status = await child.waitForExit(timeout: .seconds(60))
        return (status, child.output())
    }

    @Test func rotateStagesAKeyListShowsItAndASecondRotationIsRefused() async throws {
        let tenant = TestEnvironment.uniqueTenant("cli")
        let keys = TenantSigningKeys(envelope: try KeyEnvelope(configuration: KeyMaterial.generateConfigurationValue()))
        try await TestDatabase.withApp { database in
            try await TestDatabase.createTenant(tenant, in: database)
            try await database.withTenantTransaction(tenant) { connection in
                try await keys.createKey(tenant: tenant, status: .active, on: connection, logger: database.logger)
            }
        }
        let database = try TestEnvironment.value("LATCHKEY_TEST_DATABASE_URL")
        let environment = [
            "DATABASE_URL": database, "KEY_ENCRYPTION_KEY": KeyMaterial.generateConfigurationValue(), "USER": "tester",
        ]

        let (missingKEK, refusal) = try await Self.latchkey(
            ["keys", "rotate", "--tenant", tenant], environment: ["DATABASE_URL": database])
        #expect(missingKEK != 0)
        #expect(refusal.contains("KEY_ENCRYPTION_KEY"), "\(refusal)")

        let (rotated, rotateOutput) = try await Self.latchkey(
            ["keys", "rotate", "--tenant", tenant, "--algorithm", "EdDSA"], environment: environment)
        #expect(rotated == 0, "\(rotateOutput)")
        #expect(rotateOutput.contains("staged") && rotateOutput.contains("EdDSA"), "\(rotateOutput)")

        let (listed, listing) = try await Self.latchkey(
            ["keys", "list", "--tenant", tenant], environment: ["DATABASE_URL": database])
        #expect(listed == 0, "\(listing)")
        let rows = listing.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }.filter {
            $0.count == 7
        }
        #expect(
            rows.dropFirst().map { [$0[1], $0[2], $0[6]] } == [
                ["ES256", "active", "-"], ["EdDSA", "staged", "cli:tester"],
            ])

        let (again, againOutput) = try await Self.latchkey(
            ["keys", "rotate", "--tenant", tenant], environment: environment)
        #expect(again != 0)
        #expect(againOutput.contains("already staged"), "\(againOutput)")
        let (badAlgorithm, badOutput) = try await Self.latchkey(
            ["keys", "rotate", "--tenant", tenant, "--algorithm", "HS256"], environment: environment)
        #expect(badAlgorithm != 0)
        #expect(badOutput.contains("not a token signing algorithm"), "\(badOutput)")
        let policy = try await TestDatabase.withApp { database in
            try await database.withTenantTransaction(tenant) { connection in
                try await TenantPolicyRecords(logger: database.logger).lockedPolicy(tenant, on: connection)
            }
        }
        #expect(policy?.0.signingAlgorithm == .edDSA && policy?.1 == 2)
    }
}
