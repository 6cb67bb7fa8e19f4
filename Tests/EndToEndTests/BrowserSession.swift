import Foundation
import LatchkeyTestSupport

/// One W3C WebDriver session (one headless Chromium with its own profile): the handful of commands the
/// browser tests need, spelled as the protocol spells them.
struct BrowserSession: Sendable {
    /// The W3C key under which an element reference travels.
    static let elementKey = "element-6066-11e4-a52e-4f735466cecf"
    /// WebDriver's code points for special keys.
    static let tab = "\u{E004}", enter = "\u{E007}"

    let driver: ChromeDriver
    let id: String
    let profile: String

    /// Loads `url` and waits for the page load (following redirects, like a user's browser).
    func navigate(_ url: String) async throws {
        try await driver.call("POST", "/session/\(id)/url", ["url": url])
    }

    func currentURL() async throws -> String {
        try await driver.callValue("GET", "/session/\(id)/url") as? String ?? ""
    }

    /// The element matching the CSS selector; throws when there is none.
    func find(_ selector: String) async throws -> String {
        let value = try await driver.call(
            "POST", "/session/\(id)/element", ["using": "css selector", "value": selector])
        guard let element = value[Self.elementKey] as? String else {
            throw WebDriverError("no element for \(selector)")
        }
        return element
    }

    /// Types `text` into the element (Element Send Keys: focuses it, then sends each key).
    func type(_ element: String, _ text: String) async throws {
        try await driver.call("POST", "/session/\(id)/element/\(element)/value", ["text": text])
    }

    func click(_ element: String) async throws {
        try await driver.call("POST", "/session/\(id)/element/\(element)/click", [:])
    }

    /// Presses and releases each key on whatever element has the focus (the Actions API, like a keyboard).
    func press(_ keys: [String]) async throws {
        let actions = keys.flatMap { [["type": "keyDown", "value": $0], ["type": "keyUp", "value": $0]] }
        try await driver.call(
            "POST", "/session/\(id)/actions", ["actions": [["type": "key", "id": "keyboard", "actions": actions]]])
        try await driver.call("DELETE", "/session/\(id)/actions")
    }

    /// Runs `script` (a function body) in the page; answers its return value.
    func execute(_ script: String, _ arguments: [Any] = []) async throws -> Any? {
        try await driver.callValue("POST", "/session/\(id)/execute/sync", ["script": script, "args": arguments])
    }

    func executeString(_ script: String) async throws -> String { try await execute(script) as? String ?? "" }

    /// The cookies the browser would send to the current page, with their attributes.
    func cookies() async throws -> [[String: Any]] {
        try await driver.callValue("GET", "/session/\(id)/cookie") as? [[String: Any]] ?? []
    }

    /// The console messages since the last call (chromedriver's legacy `se/log` endpoint, type `browser`).
    func consoleLog() async throws -> [String] {
        let entries =
            try await driver.callValue("POST", "/session/\(id)/se/log", ["type": "browser"]) as? [[String: Any]] ?? []
        return entries.map { "\($0["level"] ?? "?") \($0["message"] ?? "")" }
    }

    /// A PNG of the viewport (WebDriver Take Screenshot).
    func screenshot() async throws -> Data {
        guard let base64 = try await driver.callValue("GET", "/session/\(id)/screenshot") as? String,
            let png = Data(base64Encoded: base64)
        else { throw WebDriverError("the screenshot is not base64") }
        return png
    }

    /// Emulates a viewport `width` CSS pixels wide (Chrome DevTools `Emulation.setDeviceMetricsOverride`,
    /// which chromedriver forwards): unlike resizing the window, it is not bound by a minimum window size.
    func emulateViewport(width: Int, height: Int = 900, mobile: Bool) async throws {
        try await driver.call(
            "POST", "/session/\(id)/goog/cdp/execute",
            [
                "cmd": "Emulation.setDeviceMetricsOverride",
                "params": ["width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile],
            ])
    }

    /// Polls `condition` (a loaded machine makes everything slow) until it holds or `timeout` passes.
    func waitUntil(
        _ what: String, timeout: Duration = .seconds(30), _ condition: () async throws -> Bool
    ) async throws {
        guard try await eventually(within: timeout, condition) else {
            throw WebDriverError(
                "timed out waiting until \(what); the browser is at \((try? await currentURL()) ?? "?")")
        }
    }

    /// Ends the browser and removes its profile.
    func close() async {
        _ = try? await driver.call("DELETE", "/session/\(id)")
        try? FileManager.default.removeItem(atPath: profile)
    }
}
