import AsyncHTTPClient
import BenchmarkSupport
import Foundation
import LatchkeyCore
import LatchkeyPersistence
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// `GrantsLoad --port P --report FILE …`: seeds the benchmark tenant, prepares DPoP proofs, PKCE pairs and
/// codes (through the real `/authorize` with an SSO session), then runs one closed-loop phase per grant
/// against the token service on loopback and writes the report. Env: DATABASE_URL, SECRET_HASH_KEY, and
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
        let postgres = try DatabaseConfiguration(url: databaseURL).makeClient(logger: logger)
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
            try DatabaseConfiguration(url: $0).makeClient(logger: logger)
        }
        // The tables' owner, to refresh the planner's statistics before each phase.
        let owner = try environment["ANALYZE_DATABASE_URL"].map {
            try DatabaseConfiguration(url: $0).makeClient(logger: logger)
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

    /// Runs one phase between two meter readings, on fresh planner statistics.
    static func measured(
        _ meter: Meter, _ phase: () async -> ClosedLoop.Result
    ) async -> (ClosedLoop.Result, Meter.Cost) {
        await meter.refreshStatistics()
        let start = await meter.read()
        let result = await phase()
        return (result, meter.cost(from: start, to: await meter.read()))
    }

    static func phases(
        _ client: TokenServiceClient, secret: String, arguments: Arguments, meter: Meter
    ) async throws -> [(ClosedLoop.Result, Meter.Cost)] {
        let workers = arguments.workers
        let seconds = arguments.seconds
        let cookie = try await client.signIn()
        say("signed in; preparing \(arguments.codes) codes and \(workers) refresh families")

        // Warm-up (connections, the tenant's first signing key, caches) outside the measurements.
        let basic = "Basic " + Data("\(Seeder.serviceClient):\(secret)".utf8).base64EncodedString()
        for _ in 0..<20 { _ = try await client.clientCredentials(authorization: basic) }

        let clientCredentials = await measured(meter) {
            await ClosedLoop.run(name: "client_credentials", workers: workers, seconds: seconds) { _ in
                (try? await client.clientCredentials(authorization: basic))?.status == 200
            }
        }
        say("client_credentials: \(Int(clientCredentials.0.perSecond))/s")

        let signers = try (0..<workers).map { _ in DPoPProofSigner(key: try SigningKey.generate(.es256)) }

        // authorization_code + PKCE + DPoP: codes made beforehand through /authorize (SSO, no prompt).
        struct Redemption: Sendable {
            let code: String
            let verifier: String
            let proof: String
        }
        let perWorker = max(1, arguments.codes / workers)
        var prepared: [[Redemption]] = []
        for signer in signers {
            let codes = try await withThrowingTaskGroup(of: Redemption.self) { group in
                for _ in 0..<perWorker {
                    group.addTask {
                        let verifier = PKCE.generateVerifier()
                        let code = try await client.code(cookie: cookie, verifier: verifier)
                        return Redemption(
                            code: code, verifier: verifier,
                            proof: try signer.proof(method: "POST", url: client.tokenURL))
                    }
                }
                var all: [Redemption] = []
                for try await item in group { all.append(item) }
                return all
            }
            prepared.append(codes)
        }
        say("prepared \(prepared.map(\.count).reduce(0, +)) codes")
        let redemptions = WorkerQueues(prepared)
        let authorizationCode = await measured(meter) {
            await ClosedLoop.run(name: "authorization_code + PKCE + DPoP", workers: workers, seconds: seconds) {
                worker in
                guard let item = redemptions.next(worker) else { return nil }
                return (try? await client.redeem(code: item.code, verifier: item.verifier, proof: item.proof))?.status
                    == 200
            }
        }
        say("authorization_code: \(Int(authorizationCode.0.perSecond))/s")

        // refresh_token (DPoP): one family per worker, each with its own DPoP key and pre-made proofs; after the
        // code phase, so the refresh tokens' table holds its redemptions' tokens as a running system's would.
        var families: [String] = []
        for signer in signers {
            let verifier = PKCE.generateVerifier()
            let code = try await client.code(cookie: cookie, verifier: verifier)
            let answer = try await client.redeem(
                code: code, verifier: verifier, proof: try signer.proof(method: "POST", url: client.tokenURL))
            guard answer.status == 200, let refresh = answer.json["refresh_token"] as? String else {
                throw BenchmarkError(
                    "the code exchange for a refresh family failed (\(answer.status)): \(answer.text.prefix(300))")
            }
            families.append(refresh)
        }
        let refreshProofs = WorkerQueues(
            try signers.map { signer in
                try (0..<arguments.proofsPerWorker).map { _ in try signer.proof(method: "POST", url: client.tokenURL) }
            })
        let current = RefreshFamilies(families)
        let refresh = await measured(meter) {
            await ClosedLoop.run(name: "refresh_token + DPoP", workers: workers, seconds: seconds) { worker in
                guard let proof = refreshProofs.next(worker) else { return nil }
                guard let answer = try? await client.refresh(current[worker], proof: proof), answer.status == 200,
                    let next = answer.json["refresh_token"] as? String
                else { return false }
                current[worker] = next
                return true
            }
        }
        say("refresh_token: \(Int(refresh.0.perSecond))/s")

        return [clientCredentials, authorizationCode, refresh]
    }

    static func say(_ message: String) {
        FileHandle.standardError.write(Data("[grants] \(message)\n".utf8))
    }
}

/// The newest refresh token of each worker's family (each worker touches only its own slot).
final class RefreshFamilies: Sendable {
    private let tokens: Mutex<[String]>

    init(_ tokens: [String]) { self.tokens = Mutex(tokens) }

    subscript(worker: Int) -> String {
        get { tokens.withLock { $0[worker] } }
        set { tokens.withLock { $0[worker] = newValue } }
    }
}
