import Foundation
import Testing

/// `docs/configuration.md` documents every environment variable the code reads, in the section of the
/// executable that reads it, and nothing the code does not read. A setting is documented by a table
/// row whose first cell names it in backticks; a `##` section belongs to the executables its heading
/// names in backticks, or to every executable when it names none.
@Suite struct ConfigurationDocumentTests {
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let document = "docs/configuration.md"

    /// The executable each module's code belongs to. Settings read in a library under `Sources` (or a module not listed
    /// here) may be documented in any section.
    static let executables: [String: String] = [
        "Services/RegistrationGateway": "registration-gateway",
        "Services/TokenService": "token-service",
        "Services/DPoPVerifier": "dpop-verifier",
        "Services/AuditConsumer": "audit-consumer",
        "Services/LatchkeyCLI": "latchkey",
        "Examples/DemoAPI": "demo-api",
    ]

    /// Every Swift source of the product, grouped by module: `Sources` (every library), `Services/<name>`, `Examples/<name>`.
    static func productModules() throws -> [String: [(file: String, source: String)]] {
        var modules: [String: [(file: String, source: String)]] = [:]
        for root in ["Sources", "Services", "Examples"] {
            let folder = repository.appendingPathComponent(root)
            guard let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) else {
                continue
            }
            for case let url as URL in files where url.pathExtension == "swift" {
                let relative = String(
                    url.standardizedFileURL.path.dropFirst(repository.standardizedFileURL.path.count + 1))
                let parts = relative.split(separator: "/")
                let module = root == "Sources" || parts.count < 3 ? root : "\(parts[0])/\(parts[1])"
                modules[module, default: []].append((relative, try String(contentsOf: url, encoding: .utf8)))
            }
        }
        return modules
    }

    struct Documented: Hashable {
        var name: String
        /// The executables of its section; empty for a section about every executable.
        var executables: Set<String>
        var section: String
    }

    /// The settings `text` documents: backticked `UPPER_CASE` names in the first cell of table rows.
    static func documented(in text: String, executables known: Set<String>) -> [Documented] {
        var section = ""
        var owners: Set<String> = []
        var found: [Documented] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("## ") {
                section = String(trimmed.dropFirst(3))
                owners = Set(backticked(in: section).filter(known.contains))
                continue
            }
            guard trimmed.hasPrefix("|") else { continue }
            let cells = trimmed.dropFirst().split(separator: "|", maxSplits: 1, omittingEmptySubsequences: false)
            guard let first = cells.first else { continue }
            for name in backticked(in: String(first))
            where name.range(of: "^[A-Z][A-Z0-9_]*$", options: .regularExpression) != nil {
                found.append(Documented(name: name, executables: owners, section: section))
            }
        }
        return found
    }

    static func backticked(in text: String) -> [String] {
        text.split(separator: "`", omittingEmptySubsequences: false).enumerated()
            .filter { !$0.offset.isMultiple(of: 2) }.map { String($0.element) }
    }

    static func scan() throws -> (reads: [SettingsScanner.Read], documented: [Documented]) {
        let reads = SettingsScanner.reads(modules: try productModules())
        let text = try String(contentsOf: repository.appendingPathComponent(document), encoding: .utf8)
        return (reads, documented(in: text, executables: Set(executables.values)))
    }

    @Test func everySettingTheCodeReadsIsDocumented() throws {
        let (reads, documented) = try Self.scan()
        for read in Set(reads.map { SettingsScanner.Read(name: $0.name, module: $0.module, file: "") })
            .sorted(by: { ($0.name, $0.module) < ($1.name, $1.module) })
        {
            let file = reads.first { $0.name == read.name && $0.module == read.module }?.file ?? read.module
            let rows = documented.filter { $0.name == read.name }
            #expect(
                !rows.isEmpty,
                """
                \(file) reads \(read.name), which \(Self.document) does not document: add a row for it \
                (first cell `\(read.name)`) to the table of the executable that reads it
                """)
            if let executable = Self.executables[read.module], !rows.isEmpty {
                #expect(
                    rows.contains { $0.executables.isEmpty || $0.executables.contains(executable) },
                    """
                    \(file) (\(executable)) reads \(read.name), which \(Self.document) documents only under \
                    \(rows.map { "\"\($0.section)\"" }.joined(separator: ", ")), not in a section naming `\(executable)`
                    """)
            }
        }
    }

    @Test func everyDocumentedSettingIsReadByTheCode() throws {
        let (reads, documented) = try Self.scan()
        for row in documented {
            let readers = reads.filter { $0.name == row.name }
            #expect(
                !readers.isEmpty, "\(Self.document) documents \(row.name) (\"\(row.section)\"), which no code reads")
            if !row.executables.isEmpty, !readers.isEmpty {
                let readInItsSection = readers.contains { read in
                    guard let executable = Self.executables[read.module] else { return true }
                    return row.executables.contains(executable)
                }
                #expect(
                    readInItsSection,
                    """
                    \(Self.document) documents \(row.name) under "\(row.section)", but only \
                    \(Set(readers.map(\.file)).sorted().joined(separator: ", ")) reads it
                    """)
            }
        }
    }

    /// Guards against a scan that silently finds nothing: settings read in each way the code uses.
    @Test func theScanFindsTheKnownReaders() throws {
        let names = Set(try Self.scan().reads.map(\.name))
        for expected in [
            "DATABASE_URL", "HTTP_PORT",  // SettingsReader in LatchkeyServer itself
            "DPOP_UPSTREAM_URL", "DPOP_ALLOW_BEARER",  // SettingsReader in the sidecar
            "DPOP_ALGS",  // a service's own helper over SettingsReader
            "AUDIT_BATCH_SIZE", "PLATFORM_TENANT",  // SettingsReader in other services
            "KEY_ENCRYPTION_KEY", "DPOP_NONCE_SECRET",  // SettingsReader's secret helpers
            "NIO_SINGLETON_GROUP_LOOP_COUNT", "DEMO_API_PORT",  // ProcessInfo.processInfo.environment[…]
        ] {
            #expect(names.contains(expected), "the scan no longer finds \(expected)")
        }
        #expect(names.count >= 50, "the scan found only \(names.count) settings")
    }

    @Test func theScanDoesNotDependOnFormatting() {
        let source = #"""
            import Configuration
            // reader.string(forKey: "commented.out") and getenv("COMMENTED")
            /* reader.int(forKey: "block.comment") /* nested */ reader.int(forKey: "still.comment") */
            struct Settings {
                static let portKey = "management.port"
                let url = "http://example.com/path" // a URL is not a comment start
                init(reader: ConfigReader) throws {
                    let timeout = reader
                        .int(
                            forKey:
                                "http.read.timeout.ms",
                            default: 30_000)
                    let name = reader.string(forKey: ["http", "serverName"])
                    let port = reader.int(forKey: Self.portKey, default: 9090)
                    let prefix = reader.string(forKey: ConfigKey("kafka.client.id"), default: "\(timeout) \"quoted\"")
                    let secret = try required(reader, #"raw.secret"#, message: "set it")
                    let plain = positive(reader, key: "audit.extra.limit", default: 5)
                    var environment = ProcessInfo.processInfo.environment
                    environment["CHILD_ONLY"] = "1"
                    let direct = environment["DIRECT_READ"] == nil ? getenv("GETENV_READ") : nil
                    var cache: [String: Int] = [:]
                    cache.removeValue(forKey: "not.a.setting")
                    let logger = Logger(label: "latchkey.logger.label")
                    let message = "\(reader.string(forKey: "inside.interpolation") ?? "")"
                }
                func required(_ reader: ConfigReader, _ key: String, message: String) throws -> String {
                    try lookup(reader, key)
                }
                func lookup(_ reader: ConfigReader, _ name: String) throws -> String {
                    reader.string(forKey: ConfigKey(name), isSecret: true) ?? ""
                }
                func positive(_ reader: ConfigReader, key: String, default value: Int) -> Int {
                    reader.int(forKey: .init(key), default: value)
                }
            }
            """#
        let names = Set(SettingsScanner.reads(modules: ["Services/Example": [("Example.swift", source)]]).map(\.name))
        #expect(
            names == [
                "HTTP_READ_TIMEOUT_MS", "HTTP_SERVER_NAME", "MANAGEMENT_PORT", "KAFKA_CLIENT_ID", "RAW_SECRET",
                "AUDIT_EXTRA_LIMIT", "DIRECT_READ", "GETENV_READ", "INSIDE_INTERPOLATION",
            ], "found \(names.sorted())")
        #expect(SettingsScanner.environmentName(forKey: "password.scrypt.log.n") == "PASSWORD_SCRYPT_LOG_N")
        #expect(SettingsScanner.environmentName(forKey: "http.serverTimeout") == "HTTP_SERVER_TIMEOUT")
    }
}
