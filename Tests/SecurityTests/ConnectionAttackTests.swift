import Foundation
import LatchkeyTestSupport
import Testing

/// Attacks on the HTTP connections of all four services, over raw sockets: faulty framing and `Host`
/// (RFC 9112), slow and idle clients, bodies nobody reads, and more connections than the cap. Every
/// refusal is a framed 4xx/5xx followed by a close, and none leaves an error line in a service's log.
@Suite struct ConnectionAttackTests {
    static let serviceNames = ["registration-gateway", "token-service", "dpop-verifier", "audit-consumer"]

    /// One port of one service: a path that takes a request body (the sidecar's is a public path it
    /// forwards to the demo API), one that answers an upload without reading it, and a `GET` with the
    /// status it answers when nothing is wrong with the connection.
    struct Target: Sendable {
        var name: String
        var port: Int
        var bodyPath: String
        var refusedUploadPath: String
        var probePath: String
        var probeStatus: Int
    }

    /// Every service's port, and with `management` every management port too (the same server runs there).
    static func targets(_ platform: SeededPlatform, management: Bool = true) -> [Target] {
        let ports = platform.processes.ports
        var targets = [
            Target(
                name: "registration-gateway", port: ports["registration-gateway"]!, bodyPath: "/t/demo/register",
                refusedUploadPath: "/t/demo/register", probePath: "/admin/t/demo/sign-in", probeStatus: 200),
            Target(
                name: "token-service", port: ports["token-service"]!, bodyPath: "/t/demo/token",
                refusedUploadPath: "/t/demo/token", probePath: "/t/demo/.well-known/openid-configuration",
                probeStatus: 200),
            Target(
                name: "dpop-verifier", port: ports["dpop-verifier"]!, bodyPath: "/health",
                refusedUploadPath: "/v1/orders", probePath: "/health", probeStatus: 200),
            Target(
                name: "audit-consumer", port: ports["audit-consumer"]!, bodyPath: "/audit/t/demo/verify",
                refusedUploadPath: "/audit/t/demo/verify", probePath: "/audit/t/demo/verify", probeStatus: 401),
        ]
        if management {
            for name in serviceNames {
                targets.append(
                    Target(
                        name: "\(name) management", port: platform.processes.processes[name]!.managementPort,
                        bodyPath: "/healthz", refusedUploadPath: "/healthz", probePath: "/healthz", probeStatus: 200))
            }
        }
        return targets
    }

    @Test func faultyFramingIsAnsweredWithAFramedErrorAndAClose() async throws {
        try await SeededPlatform.run { platform in
            let logs = ServiceLogMarks(platform)
            for target in Self.targets(platform) {
                let (name, port, path, probe) = (target.name, target.port, target.bodyPath, target.probePath)
                var attacks: [(label: String, request: String, statuses: Set<Int>)] = [
                    (
                        "unknown transfer coding",
                        "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: xchunked\r\n\r\n", [400, 501]
                    ),
                    (
                        "chunked not final",
                        "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", [400]
                    ),
                    (
                        "chunked HTTP/1.0",
                        "POST \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
                        [400]
                    ),
                    ("CONNECT", "CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\n\r\n", [405, 501]),
                ]
                for size in ["zz", "-1", "0x10", "12345678901234567890"] {
                    attacks.append(
                        (
                            "chunk size \(size)",
                            "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n\(size)\r\nabc\r\n0\r\n\r\n",
                            [400]
                        ))
                }
                for (label, request, statuses) in attacks {
                    let client = try await RawClient.connect(port: port)
                    defer { client.close() }
                    await client.send(request)
                    // A client reading to the end of the stream must get there.
                    let closed = await client.waitFor(.seconds(30)) { $0.isClosed }
                    #expect(statuses.contains(client.status ?? 0), "\(name), \(label): \(client.received.prefix(300))")
                    #expect(
                        client.firstAnswerIsFramed,
                        "\(name), \(label): no Content-Length framing: \(client.received.prefix(300))")
                    #expect(client.statuses.count == 1, "\(name), \(label): \(client.received.prefix(600))")
                    #expect(closed, "\(name), \(label): the connection stayed open")
                }

                // HTTP/1.0 closes after the answer unless it asks for keep-alive.
                let plain = try await RawClient.connect(port: port)
                defer { plain.close() }
                await plain.send("GET \(probe) HTTP/1.0\r\n\r\n")
                let closed = await plain.waitFor(.seconds(30)) { $0.isClosed }
                #expect(plain.status == target.probeStatus, "\(name), HTTP/1.0: \(plain.received.prefix(300))")
                #expect(closed, "\(name): an HTTP/1.0 connection without keep-alive stayed open")
                let kept = try await RawClient.connect(port: port)
                defer { kept.close() }
                await kept.send("GET \(probe) HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
                #expect(await kept.waitFor(.seconds(30)) { $0.statuses.count == 1 })
                await kept.send("GET \(probe) HTTP/1.0\r\n\r\n")
                #expect(
                    await kept.waitFor(.seconds(30)) {
                        $0.statuses == [target.probeStatus, target.probeStatus] && $0.isClosed
                    },
                    "\(name), HTTP/1.0 keep-alive: \(kept.received.suffix(300))")
            }
            logs.expectNoErrorLines()
        }
    }

    @Test func hostMustBeExactlyOneValidAuthority() async throws {
        try await SeededPlatform.run { platform in
            let logs = ServiceLogMarks(platform)
            for target in Self.targets(platform) {
                let (name, port, probe) = (target.name, target.port, target.probePath)
                let cases: [(label: String, fields: String, status: Int)] = [
                    ("missing", "", 400),
                    ("duplicate", "Host: 127.0.0.1:\(port)\r\nHost: evil.example\r\n", 400),
                    ("userinfo", "Host: user@127.0.0.1:\(port)\r\n", 400),
                    ("path", "Host: 127.0.0.1/admin\r\n", 400),
                    ("port out of range", "Host: 127.0.0.1:99999\r\n", 400),
                    ("space", "Host: 127.0.0.1 evil.example\r\n", 400),
                    ("valid", "Host: 127.0.0.1:\(port)\r\n", target.probeStatus),
                    ("IPv6 literal", "Host: [::1]:\(port)\r\n", target.probeStatus),
                    ("registered name", "Host: API.example.com\r\n", target.probeStatus),
                ]
                for (label, fields, status) in cases {
                    let client = try await RawClient.connect(port: port)
                    defer { client.close() }
                    await client.send("GET \(probe) HTTP/1.1\r\n\(fields)\r\n")
                    #expect(
                        await client.waitFor(.seconds(30)) { $0.firstAnswerIsFramed },
                        "\(name), Host \(label): \(client.received)")
                    #expect(client.status == status, "\(name), Host \(label): \(client.received.prefix(300))")
                    if status == 400 {
                        #expect(
                            await client.waitFor(.seconds(30)) { $0.isClosed }, "\(name), Host \(label): still open")
                    }
                }
                // HTTP/1.0 may leave Host out.
                let old = try await RawClient.connect(port: port)
                defer { old.close() }
                await old.send("GET \(probe) HTTP/1.0\r\n\r\n")
                #expect(await old.waitFor(.seconds(30)) { $0.status != nil })
                #expect(old.status == target.probeStatus, "\(name), HTTP/1.0 without Host: \(old.received.prefix(300))")
            }
            logs.expectNoErrorLines()
        }
    }

    /// Short deadlines: the head must be complete 2 s after its first byte, and a client may stay silent 3 s.
    @Test func slowHeadsStalledUploadsAndIdleConnectionsAreCutOff() async throws {
        try await SeededPlatform.run(settings: ["HTTP_HEADER_TIMEOUT_SECONDS": "2", "HTTP_IDLE_TIMEOUT_SECONDS": "3"]) {
            platform in
            let logs = ServiceLogMarks(platform)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for target in Self.targets(platform) {
                    let (name, port, uploadPath, probe, probeStatus) =
                        (target.name, target.port, target.refusedUploadPath, target.probePath, target.probeStatus)
                    // Five clients sending their head at one byte a second: each gets 408 long before its head is complete.
                    for index in 0..<5 {
                        group.addTask {
                            let head = "GET \(probe) HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: \(index)\r\n\r\n"
                            let client = try await RawClient.connect(port: port)
                            defer { client.close() }
                            var sent = 0
                            for byte in head {
                                guard !client.isClosed, await client.send(String(byte)) else { break }
                                sent += 1
                                try await Task.sleep(for: .seconds(1))
                            }
                            #expect(
                                await client.waitFor(.seconds(30)) { $0.isClosed },
                                "\(name): a slow head was served: \(client.received)")
                            #expect(
                                sent < head.count,
                                "\(name): the whole slow head was read (\(client.received.prefix(200)))")
                            #expect(client.status == 408, "\(name), slow head: \(client.received.prefix(300))")
                        }
                    }
                    // An idle keep-alive connection, and one that never sends a byte, are closed.
                    group.addTask {
                        let idle = try await RawClient.connect(port: port)
                        defer { idle.close() }
                        await idle.send("GET \(probe) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                        #expect(await idle.waitFor(.seconds(30)) { $0.status != nil })
                        #expect(idle.status == probeStatus, "\(name): \(idle.received.prefix(300))")
                        #expect(
                            await idle.waitFor(.seconds(45)) { $0.isClosed },
                            "\(name): an idle keep-alive connection stayed open")
                        let silent = try await RawClient.connect(port: port)
                        defer { silent.close() }
                        #expect(
                            await silent.waitFor(.seconds(45)) { $0.isClosed },
                            "\(name): a silent connection stayed open")
                        #expect(silent.received.isEmpty)
                    }
                    // A body declared huge and sent a byte at a time, to a request the service answers
                    // without reading it: answered, then closed, while bytes keep coming (faster than the
                    // idle deadline, so only the answer ends it).
                    group.addTask {
                        let upload = try await RawClient.connect(port: port)
                        defer { upload.close() }
                        await upload.send(
                            "POST \(uploadPath) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 99999999999\r\n\r\n{"
                        )
                        let deadline = ContinuousClock.now + .seconds(45)
                        while !upload.isClosed, ContinuousClock.now < deadline {
                            guard await upload.send("x") else { break }
                            try await Task.sleep(for: .milliseconds(500))
                        }
                        #expect(
                            upload.isClosed,
                            "\(name): an answered upload kept its connection: \(upload.received.prefix(300))")
                        #expect(
                            (400..<500).contains(upload.status ?? 0), "\(name), upload: \(upload.received.prefix(300))")
                        #expect(
                            upload.received.lowercased().contains("\r\nconnection: close\r\n"),
                            "\(name): \(upload.received.prefix(300))")
                    }
                }
                try await group.waitForAll()
            }
            logs.expectNoErrorLines()
        }
    }

    /// At most `HTTP_MAX_CONNECTIONS` connections are served at once (plus the few a listener accepts in
    /// one wake-up); the others wait in the backlog and are served once served ones close.
    @Test func connectionsBeyondTheCapWaitUntilOthersClose() async throws {
        let cap = 4
        // A short idle deadline ends the connections the harness left open, which count against the cap too.
        try await SeededPlatform.run(settings: ["HTTP_MAX_CONNECTIONS": String(cap), "HTTP_IDLE_TIMEOUT_SECONDS": "15"])
        { platform in
            for target in Self.targets(platform, management: false) {
                let (name, port) = (target.name, target.port)
                var waiting: [RawClient] = []
                for _ in 0..<12 {
                    let client = try await RawClient.connect(port: port)
                    await client.send("GET \(target.probePath) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                    waiting.append(client)
                }
                // NIO accepts up to four connections per wake-up before the limiter pauses accepting.
                let ceiling = cap + 3
                var rounds = 0
                while !waiting.isEmpty, rounds < 12 {
                    rounds += 1
                    let progressed = try await eventually(within: .seconds(60)) {
                        waiting.contains { $0.status != nil }
                    }
                    #expect(progressed, "\(name): \(waiting.count) connections were never served")
                    guard progressed else { break }
                    // Give the rest a chance to be (wrongly) served too; the ceiling holds at any moment.
                    try await Task.sleep(for: .seconds(2))
                    let served = waiting.filter { $0.status != nil }
                    #expect(
                        served.count <= ceiling,
                        "\(name): \(served.count) connections served at once with a cap of \(cap)")
                    #expect(served.allSatisfy { $0.status == target.probeStatus }, "\(name): \(served.map(\.received))")
                    for client in served { client.close() }
                    waiting.removeAll { $0.status != nil }
                }
                #expect(waiting.isEmpty, "\(name): \(waiting.count) connections left unserved")
                for client in waiting { client.close() }
            }
        }
    }
}

/// Where each service's log stood before an attack: afterwards, none may hold an error-level line or an
/// "unhandled error" that the attack caused.
struct ServiceLogMarks {
    let platform: SeededPlatform
    let offsets: [String: Int]

    init(_ platform: SeededPlatform) {
        self.platform = platform
        var offsets: [String: Int] = [:]
        for name in ConnectionAttackTests.serviceNames { offsets[name] = platform.processes.output(name).utf8.count }
        self.offsets = offsets
    }

    func expectNoErrorLines(sourceLocation: SourceLocation = #_sourceLocation) {
        for (name, offset) in offsets {
            let added = String(decoding: Array(platform.processes.output(name).utf8).dropFirst(offset), as: UTF8.self)
            let errors = added.split(separator: "\n").filter { line in
                let words = line.split(separator: " ", maxSplits: 2)
                return line.contains("unhandled error")
                    || (words.count > 1 && ["error", "critical"].contains(words[1]))
            }
            #expect(
                errors.isEmpty, "\(name) logged errors: \(errors.prefix(5).joined(separator: "\n"))",
                sourceLocation: sourceLocation)
        }
    }
}
