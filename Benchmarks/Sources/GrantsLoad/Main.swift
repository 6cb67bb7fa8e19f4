import AsyncHTTPClient
import BenchmarkSupport
import Foundation
import LatchkeyCore
import LatchkeyPersistence
import Logging
import NIOCore
import NIOPosix
import PostgresNIO

/// `GrantsLoad --port P --report FILE …`: seeds the benchmark tenant, prepares DPoP proofs, PKCE pairs and
/// codes (through the real `/authorize` with an SSO session), then runs one closed-loop phase per grant
/// against the token service on loopback, sent by `wrk` (``WrkPhase``), and writes the report. Env: DATABASE_URL, SECRET_HASH_KEY, and
/// STATS_DATABASE_URL (a database with the `pg_stat_statements` view) for statements per grant.
/// `GrantsLoad json-encoding [--seconds S]`: see `JSONEncodingSpeed`.
@main
struct GrantsLoad {
    static func main() async {
        do {
            if CommandLine.arguments.dropFirst().first == "json-encoding" {
                let seconds = CommandLine.arguments.count > 3 ? Double(CommandLine.arguments[3]) ?? 2 : 2
                try JSONEncodingSpeed.run(seconds: seconds)
                return
            }
            try await run(Arguments(CommandLine.arguments.dropFirst()))
        } catch {
            FileHandle.standardError.write(Data("GrantsLoad: \(error)\n".utf8))
            exit(1)
        }
    }

    static func run(_ arguments: Arguments) async throws {
        let environment = ProcessInfo.processInfo.environment
        guard let databaseURL = environment["DATABASE_URL"], let hashKey = environment["SECRET_HASH_KEY"] else {
            throw BenchmarkError("DATABASE_URL and SECRET_HASH_KEY are required")
        }
        let logger = Logger(label: "grants-load")
        let postgres = try DatabaseConfiguration(url: databaseURL).onDemand.makeClient(logger: logger)
        let secret = try await withThrowingTaskGroup(of: String?.self) { group in
            group.addTask {
                await postgres.run()
                return nil
            }
            defer { group.cancelAll() }
            return try await Seeder(
                database: Database(client: postgres, logger: logger), hasher: KeyedHasher(configuration: hashKey)
            ).seed()
        }

        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        configuration.connectionPool = .init(
            idleTimeout: .seconds(120), concurrentHTTP1ConnectionsPerHostSoftLimit: arguments.workers)
        let http = HTTPClient(
            eventLoopGroupProvider: .shared(MultiThreadedEventLoopGroup.singleton), configuration: configuration)
        let stats = try environment["STATS_DATABASE_URL"].map {
            try DatabaseConfiguration(url: $0).onDemand.makeClient(logger: logger)
        }
        // The tables' owner, to refresh the planner's statistics before each phase.
        let owner = try environment["ANALYZE_DATABASE_URL"].map {
            try DatabaseConfiguration(url: $0).onDemand.makeClient(logger: logger)
        }
        let meter = Meter(
            servicePID: arguments.servicePID, postmasterPID: arguments.postmasterPID, statsClient: stats,
            databaseName: try DatabaseConfiguration(url: databaseURL).database, logger: logger,
            statisticsClient: owner)
        try await withThrowingTaskGroup(of: Void.self) { group in
            if let stats { group.addTask { await stats.run() } }
            if let owner { group.addTask { await owner.run() } }
            defer { group.cancelAll() }
            do {
                let results = try await phases(
                    TokenServiceClient(http: http, origin: "http://127.0.0.1:\(arguments.port)"), secret: secret,
                    arguments: arguments, meter: meter)
                // The relay sends what the load left, then the service idles with every periodic job running.
                try await Task.sleep(for: .seconds(5))
                say("measuring the idle service for \(Int(arguments.idleSeconds)) s")
                let start = await meter.read()
                try await Task.sleep(for: .seconds(arguments.idleSeconds))
                let idle = meter.cost(from: start, to: await meter.read())
                try Report(arguments: arguments, results: results, idle: idle).write()
                try await http.shutdown()
            } catch {
                try? await http.shutdown()
                throw error
            }
        }
    }

    /// What one phase measured: the load's result, its cost, and pgbench's rate around it when measured.
    struct Phase {
        let result: WrkPhase.Result
        let cost: Meter.Cost
        let pgbenchTPS: Double?
    }

    /// Runs one phase between two meter readings, on fresh planner statistics, with pgbench before and after it
    /// when a baseline is given (outside the meter readings).
    static func measured(
        _ meter: Meter, baseline: PgbenchBaseline?, _ phase: () throws -> WrkPhase.Result
    ) async throws -> Phase {
        let before = try baseline?.measure()
        await meter.refreshStatistics()
        let start = await meter.read()
        let result = try phase()
        let cost = meter.cost(from: start, to: await meter.read())
        let after = try baseline?.measure()
        return Phase(result: result, cost: cost, pgbenchTPS: before.flatMap { b in after.map { (b + $0) / 2 } })
    }

    static func phases(
        _ client: TokenServiceClient, secret: String, arguments: Arguments, meter: Meter
    ) async throws -> [Phase] {
        let wrk = WrkPhase(
            script: arguments.wrkScript, url: client.origin, threads: arguments.wrkThreads,
            connections: arguments.workers, seconds: arguments.seconds,
            directory: FileManager.default.temporaryDirectory)
        let form = ("Content-Type", "application/x-www-form-urlencoded")
        let cookie = try await client.signIn()
        say("signed in; preparing \(arguments.codes) codes and \(arguments.workers) refresh families")

        // Warm-up (connections, the tenant's first signing key, caches) outside the measurements.
        let basic = "Basic " + Data("\(Seeder.serviceClient):\(secret)".utf8).base64EncodedString()
        for _ in 0..<20 { _ = try await client.clientCredentials(authorization: basic) }

        let clientCredentials = try await measured(meter, baseline: arguments.phaseBaseline) {
            try wrk.run(
                name: "client_credentials",
                .repeating(
                    .init(
                        path: client.tokenPath, headers: [("Authorization", basic), form],
                        body: "grant_type=client_credentials")))
        }
        say("client_credentials: \(Int(clientCredentials.result.perSecond))/s")

        // One DPoP key for every proof: a refresh token of the public app is bound to the key that got it, and a
        // chain's token may go out with any proof of its wrk thread.
        let signer = DPoPProofSigner(key: try SigningKey.generate(.es256))
        let proof: @Sendable () throws -> String = { try signer.proof(method: "POST", url: client.tokenURL) }

        // authorization_code + PKCE + DPoP: codes made beforehand through /authorize (SSO, no prompt).
        var redemptions: [WrkPhase.Request] = []
        while redemptions.count < arguments.codes {
            let batch = min(arguments.workers * 16, arguments.codes - redemptions.count)
            redemptions += try await withThrowingTaskGroup(of: WrkPhase.Request.self) { group in
                for _ in 0..<batch {
                    group.addTask {
                        let verifier = PKCE.generateVerifier()
                        let code = try await client.code(cookie: cookie, verifier: verifier)
                        return WrkPhase.Request(
                            path: client.tokenPath, headers: [("DPoP", try proof()), form],
                            body: TokenServiceClient.encode([
                                ("grant_type", "authorization_code"), ("code", code),
                                ("redirect_uri", Seeder.redirectURI), ("client_id", Seeder.nativeApp),
                                ("code_verifier", verifier),
                            ]))
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        say("prepared \(redemptions.count) codes")
        let authorizationCode = try await measured(meter, baseline: arguments.phaseBaseline) {
            try wrk.run(name: "authorization_code + PKCE + DPoP", .once(dealt(redemptions, to: wrk.threads)))
        }
        say("authorization_code: \(Int(authorizationCode.result.perSecond))/s")

        // refresh_token + DPoP: one family per connection, each rotation's token sent again with a fresh proof;
        // after the code phase, so the refresh tokens' table holds its redemptions' tokens as a running system's
        // would.
        var families: [String] = []
        for _ in 0..<arguments.workers {
            let verifier = PKCE.generateVerifier()
            let code = try await client.code(cookie: cookie, verifier: verifier)
            let answer = try await client.redeem(code: code, verifier: verifier, proof: try proof())
            guard answer.status == 200, let refresh = answer.json["refresh_token"] as? String else {
                throw BenchmarkError(
                    "the code exchange for a refresh family failed (\(answer.status)): \(answer.text.prefix(300))")
            }
            families.append(refresh)
        }
        let proofs = try (0..<arguments.proofsPerWorker * arguments.workers).map { _ in try proof() }
        let template = WrkPhase.Request(
            path: client.tokenPath, headers: [form],
            body: TokenServiceClient.encode([("grant_type", "refresh_token"), ("client_id", Seeder.nativeApp)])
                + "&refresh_token=")
        let refresh = try await measured(meter, baseline: arguments.phaseBaseline) {
            try wrk.run(
                name: "refresh_token + DPoP",
                .chains(
                    template: template, tokens: dealt(families, to: wrk.threads),
                    proofs: dealt(proofs, to: wrk.threads)))
        }
        say("refresh_token: \(Int(refresh.result.perSecond))/s")

        return [clientCredentials, authorizationCode, refresh]
    }

    /// `items` dealt round-robin into `count` hands.
    static func dealt<Item>(_ items: [Item], to count: Int) -> [[Item]] {
        var hands = Array(repeating: [Item](), count: count)
        for (index, item) in items.enumerated() { hands[index % count].append(item) }
        return hands
    }

    static func say(_ message: String) {
        FileHandle.standardError.write(Data("[grants] \(message)\n".utf8))
    }
}
