import AsyncHTTPClient
import Foundation
import LatchkeyTestSupport
import NIOCore
import NIOHTTP1

/// `chromedriver` (Debian's `chromium-driver`) as a child process, answering the W3C WebDriver protocol
/// on a free loopback port. Spawned directly: `ServiceProcess` only runs executables built next to the tests.
final class ChromeDriver: Sendable {
    static let driverPath = "/usr/bin/chromedriver"
    static let browserPath = "/usr/bin/chromium"

    let url: String
    let client: HTTPClient
    private let child: ChildProcess

    /// Starts chromedriver and waits until `/status` says it is ready; throws (never skips) when
    /// chromium or chromedriver is not installed.
    init() async throws {
        for path in [Self.driverPath, Self.browserPath] where !FileManager.default.isExecutableFile(atPath: path) {
            throw WebDriverError(
                "\(path) is missing: install the Debian packages chromium and chromium-driver (scripts/test.sh does)")
        }
        let port = ServiceProcess.freePort()
        url = "http://127.0.0.1:\(port)"
        child = try ChildProcess(
            executable: Self.driverPath, arguments: ["--port=\(port)", "--allowed-ips=127.0.0.1"],
            environment: ProcessInfo.processInfo.environment)
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        configuration.timeout = .init(connect: .seconds(5), read: .seconds(90))
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline, child.isRunning {
            if let status = try? await call("GET", "/status"), (status["ready"] as? Bool) == true { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        let output = child.output()
        try await client.shutdown()
        throw WebDriverError("chromedriver did not become ready: \(output.suffix(2_000))")
    }

    /// A new headless Chromium with its own empty profile (no cookies shared with other sessions).
    func newSession() async throws -> BrowserSession {
        let profile = FileManager.default.temporaryDirectory.appendingPathComponent(
            "latchkey-chromium-\(UUID().uuidString)"
        ).path
        let capabilities: [String: Any] = [
            "capabilities": [
                "alwaysMatch": [
                    "browserName": "chrome",
                    "goog:chromeOptions": [
                        "binary": Self.browserPath,
                        "args": [
                            "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                            "--user-data-dir=\(profile)", "--no-first-run", "--window-size=1280,900",
                        ],
                    ],
                    "goog:loggingPrefs": ["browser": "ALL"],
                    "timeouts": ["pageLoad": 60_000, "script": 30_000, "implicit": 0],
                ] as [String: Any]
            ]
        ]
        let value = try await call("POST", "/session", capabilities)
        guard let id = value["sessionId"] as? String else { throw WebDriverError("no session id in \(value)") }
        return BrowserSession(driver: self, id: id, profile: profile)
    }

    /// Runs `body` with a new browser session and always ends it.
    func withSession<T>(_ body: (BrowserSession) async throws -> T) async throws -> T {
        let session = try await newSession()
        do {
            let result = try await body(session)
            await session.close()
            return result
        } catch {
            await session.close()
            throw error
        }
    }

    /// One WebDriver command; answers the `value` member, throws the W3C error when there is one.
    @discardableResult
    func call(_ method: String, _ path: String, _ body: [String: Any]? = nil) async throws -> [String: Any] {
        try await callValue(method, path, body) as? [String: Any] ?? [:]
    }

    /// One WebDriver command whose `value` may be any JSON value.
    func callValue(_ method: String, _ path: String, _ body: [String: Any]? = nil) async throws -> Any? {
        var request = HTTPClientRequest(url: url + path)
        request.method = HTTPMethod(rawValue: method)
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
        }
        let response = try await client.execute(request, timeout: .seconds(90))
        let data = Data(try await response.body.collect(upTo: 16 * 1024 * 1024).readableBytesView)
        let json = (try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])) as? [String: Any]
        let value = json?["value"]
        if response.status != .ok {
            let error = (value as? [String: Any]).map { "\($0["error"] ?? "?"): \($0["message"] ?? "")" }
            throw WebDriverError(
                "\(method) \(path) → \(response.status.code) \(error ?? String(decoding: data.prefix(500), as: UTF8.self))"
            )
        }
        return value is NSNull ? nil : value
    }

    /// Stops chromedriver (and any browser it still runs).
    func stop() async throws {
        child.send(SIGTERM)
        if await child.waitForExit(timeout: .seconds(10)) == nil {
            child.send(SIGKILL)
            _ = await child.waitForExit(timeout: .seconds(5))
        }
        try await client.shutdown()
    }

    func output() -> String { child.output() }
}

/// A WebDriver command failed, or the browser never reached the state a test waited for.
struct WebDriverError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
