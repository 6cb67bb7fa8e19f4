import Foundation
import Testing

/// Screenshots of every page the browser tests visit, at a desktop and a phone width, in the git-ignored
/// `.build/screenshots/`; taking one also asserts that the page logged no console error or CSP violation.
enum PageScreenshots {
    static let widths = [1280, 390]

    /// `<package>/.build/screenshots` (this file is `<package>/Tests/EndToEndTests/PageScreenshots.swift`).
    static let folder: URL = {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/screenshots", isDirectory: true)
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        print("browser screenshots: \(folder.path)")
        return folder
    }()

    /// Fails on any SEVERE console entry since the last read (CSP violations and script errors are SEVERE),
    /// then writes `<name>-<width>.png` for each width and checks each file is a real, non-trivial PNG.
    /// `documentStatus`: an error page answered with this status on purpose; Chromium logs the document's
    /// own status as SEVERE ("Failed to load resource"), and only that one entry is allowed.
    static func capture(_ browser: BrowserSession, _ name: String, documentStatus: Int? = nil) async throws {
        let page = try await browser.currentURL()
        let severe = try await browser.consoleLog().filter { $0.hasPrefix("SEVERE") }.filter { entry in
            !isOtherOriginsFavicon(entry, page: page)
        }.filter { entry in
            guard let documentStatus else { return true }
            return !entry.hasPrefix(
                "SEVERE \(page) - Failed to load resource: the server responded with a status of \(documentStatus) ")
        }
        #expect(severe == [], "console errors or CSP violations on \(name)")
        for width in widths {
            try await browser.emulateViewport(width: width, mobile: width < 600)
            try await browser.waitUntil("the \(width) px layout is applied") {
                try await browser.execute("return window.innerWidth") as? Int == width
            }
            // Nothing wider than the viewport: a narrow phone must not scroll sideways.
            #expect(
                try await browser.execute("return document.documentElement.scrollWidth") as? Int ?? .max <= width,
                "\(name) is wider than \(width) px")
            let png = try await browser.screenshot()
            let file = folder.appendingPathComponent("\(name)-\(width).png")
            try png.write(to: file)
            let written = try Data(contentsOf: file)
            #expect(
                written.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]),
                "\(file.lastPathComponent) is not a PNG")
            #expect(written.count > 5_000, "\(file.lastPathComponent) is only \(written.count) bytes")
            #expect(pixelWidth(written) == width, "\(file.lastPathComponent) is \(pixelWidth(written) ?? 0) px wide")
        }
        try await browser.emulateViewport(width: widths[0], mobile: false)
        let afterwards = try await browser.consoleLog().filter { $0.hasPrefix("SEVERE") }.filter { entry in
            !isOtherOriginsFavicon(entry, page: page)
        }
        #expect(afterwards == [], "console errors or CSP violations on \(name) while resizing")
    }

    /// The width in the PNG's IHDR chunk (bytes 16–19, big-endian).
    static func pixelWidth(_ png: Data) -> Int? {
        guard png.count > 24 else { return nil }
        return png[16..<20].reduce(0) { $0 << 8 | Int($1) }
    }

    /// Chromium asks a server for `/favicon.ico` on its own, some time after showing one of its pages, and logs
    /// the 404 when that is read later: a test server's (an upstream provider's, a loopback callback's) can
    /// surface on the next page. Those are not about the page captured; a miss on the page's own origin is.
    static func isOtherOriginsFavicon(_ entry: String, page: String) -> Bool {
        guard let url = URL(string: page), let scheme = url.scheme, let host = url.host else { return false }
        let origin = "\(scheme)://\(host)" + (url.port.map { ":\($0)" } ?? "")
        guard entry.hasPrefix("SEVERE http"), entry.contains("/favicon.ico - Failed to load resource") else {
            return false
        }
        return !entry.hasPrefix("SEVERE \(origin)/favicon.ico ")
    }
}
