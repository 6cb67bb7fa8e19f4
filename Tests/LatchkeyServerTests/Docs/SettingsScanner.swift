import Foundation

/// Finds the environment variables Swift sources read, from the source text alone.
///
/// Sources are tokenised first (comments dropped, string literals kept whole, whitespace and line
/// breaks ignored), so formatting does not matter. A setting is read where
/// - a swift-configuration key is given: `forKey: "http.port"`, `forKey: ["http", "port"]`,
///   `ConfigKey("http.port")` (a constant of the same file holding the literal counts too);
/// - a function that passes one of its parameters on as such a key (a settings helper like
///   `int(_ key: String, default:)`, also through other helpers) is called with a literal there;
/// - the process environment is read directly: `environment["NAME"]` (not assigned to) or `getenv("NAME")`.
/// Keys become variable names the way swift-configuration's `EnvironmentVariablesProvider` does it:
/// `password.scrypt.log.n` → `PASSWORD_SCRYPT_LOG_N`, `http.serverTimeout` → `HTTP_SERVER_TIMEOUT`.
struct SettingsScanner {
    struct Read: Hashable, Sendable {
        /// The environment variable.
        var name: String
        /// The module (`Sources`, `Services/TokenService`, …) whose code reads it.
        var module: String
        /// The file, relative to the scanned root.
        var file: String
    }

    enum Token: Equatable {
        case identifier(String)
        case literal(String)
        case symbol(Character)
    }

    /// A module's sources: file name → tokens.
    typealias Module = [(file: String, tokens: [Token])]

    /// `forKey:` of these methods is a dictionary, KVC or Codable key, not a configuration key.
    static let nonConfigurationMethods: Set<String> = [
        "removeValue", "updateValue", "setValue", "value", "object", "set", "encode", "encodeIfPresent",
        "decode", "decodeIfPresent", "nestedContainer", "nestedUnkeyedContainer", "contains", "superDecoder",
        "superEncoder", "index",
    ]

    /// The environment variable swift-configuration reads for `key`.
    static func environmentName(forKey key: String) -> String {
        key.split(separator: ".", omittingEmptySubsequences: false).map { component -> String in
            var split = ""
            var previous: Character?
            for character in component {
                if let previous, previous.isLowercase, character.isUppercase { split.append("_") }
                split.append(character)
                previous = character
            }
            return String(split.uppercased().map { $0.isLetter || $0.isNumber ? $0 : "_" })
        }.joined(separator: "_")
    }

    /// What `modules` read. `modules` maps a module name to its files (relative path, source text).
    static func reads(modules: [String: [(file: String, source: String)]], shared: String = "Sources") -> [Read] {
        let tokenised = modules.mapValues { files in files.map { (file: $0.file, tokens: tokens(of: $0.source)) } }
        let sharedWrappers = wrappers(in: tokenised[shared] ?? [], known: [:])
        var found: [Read] = []
        for (module, files) in tokenised {
            let known = module == shared ? sharedWrappers : wrappers(in: files, known: sharedWrappers)
            for (file, tokens) in files {
                for name in names(in: tokens, wrappers: known) {
                    found.append(Read(name: name, module: module, file: file))
                }
            }
        }
        return found
    }

    // MARK: Tokens

    /// The tokens of a Swift source: identifiers (also numbers), whole string literals (text without
    /// interpolations) and single punctuation characters; comments and whitespace dropped.
    static func tokens(of source: String) -> [Token] {
        var lexer = Lexer(characters: Array(source))
        lexer.code(insideInterpolation: false)
        return lexer.tokens
    }

    struct Lexer {
        let characters: [Character]
        var index = 0
        var tokens: [Token] = []

        init(characters: [Character]) {
            self.characters = characters
        }

        func peek(_ offset: Int) -> Character? {
            index + offset < characters.count ? characters[index + offset] : nil
        }

        static func isIdentifier(_ character: Character) -> Bool {
            character.isLetter || character.isNumber || character == "_" || character == "$"
        }

        /// Code up to the end, or, inside an interpolation, up to the `)` that closes it.
        mutating func code(insideInterpolation: Bool) {
            var depth = 0
            while let character = peek(0) {
                if character == "/", peek(1) == "/" {
                    while let next = peek(0), next != "\n" { index += 1 }
                    continue
                }
                if character == "/", peek(1) == "*" {
                    var nesting = 0
                    repeat {
                        if peek(0) == "/", peek(1) == "*" {
                            nesting += 1
                            index += 2
                        } else if peek(0) == "*", peek(1) == "/" {
                            nesting -= 1
                            index += 2
                        } else {
                            index += 1
                        }
                    } while nesting > 0 && index < characters.count
                    continue
                }
                if character == "#" || character == "\"" {
                    var hashes = 0
                    while peek(hashes) == "#" { hashes += 1 }
                    if peek(hashes) == "\"" {
                        index += hashes
                        let text = stringLiteral(hashes: hashes)
                        tokens.append(.literal(text))
                        continue
                    }
                }
                if character.isWhitespace {
                    index += 1
                    continue
                }
                if character == "`" {
                    var name = ""
                    index += 1
                    while let next = peek(0), next != "`", next != "\n" {
                        name.append(next)
                        index += 1
                    }
                    index += 1
                    tokens.append(.identifier(name))
                    continue
                }
                if Self.isIdentifier(character) {
                    var name = ""
                    while let next = peek(0), Self.isIdentifier(next) {
                        name.append(next)
                        index += 1
                    }
                    tokens.append(.identifier(name))
                    continue
                }
                if insideInterpolation {
                    if character == "(" { depth += 1 }
                    if character == ")" {
                        if depth == 0 {
                            index += 1
                            return
                        }
                        depth -= 1
                    }
                }
                tokens.append(.symbol(character))
                index += 1
            }
        }

        /// A string literal whose opening quote is at `index`, with `hashes` raw-string delimiters.
        /// Interpolated code is lexed too (its tokens kept), but is not part of the literal's text.
        mutating func stringLiteral(hashes: Int) -> String {
            let quotes = peek(1) == "\"" && peek(2) == "\"" ? 3 : 1
            index += quotes
            var text = ""
            while let character = peek(0) {
                if character == "\\", (0..<hashes).allSatisfy({ peek(1 + $0) == "#" }) {
                    let after = 1 + hashes
                    if peek(after) == "(" {
                        index += after + 1
                        code(insideInterpolation: true)
                        text.append("\u{FFFC}")
                    } else {
                        if let escaped = peek(after) { text.append(escaped) }
                        index += after + 1
                    }
                    continue
                }
                if character == "\"", (0..<quotes).allSatisfy({ peek($0) == "\"" }),
                    (0..<hashes).allSatisfy({ peek(quotes + $0) == "#" })
                {
                    index += quotes + hashes
                    return text
                }
                if quotes == 1, character == "\n" { return text }
                text.append(character)
                index += 1
            }
            return text
        }
    }

    // MARK: Structure

    /// The index of the token closing the bracket opened at `open`, or nil.
    static func closing(_ tokens: [Token], from open: Int) -> Int? {
        var depth = 0
        var index = open
        while index < tokens.count {
            if case .symbol(let character) = tokens[index] {
                if "([{".contains(character) { depth += 1 }
                if ")]}".contains(character) {
                    depth -= 1
                    if depth == 0 { return index }
                }
            }
            index += 1
        }
        return nil
    }

    /// The comma-separated items between the bracket at `open` and its closing one.
    static func items(_ tokens: [Token], from open: Int) -> [ArraySlice<Token>]? {
        guard let close = closing(tokens, from: open) else { return nil }
        var items: [ArraySlice<Token>] = []
        var depth = 0
        var start = open + 1
        for index in (open + 1)..<close {
            guard case .symbol(let character) = tokens[index] else { continue }
            if "([{".contains(character) { depth += 1 }
            if ")]}".contains(character) { depth -= 1 }
            if character == ",", depth == 0 {
                items.append(tokens[start..<index])
                start = index + 1
            }
        }
        if start < close { items.append(tokens[start..<close]) }
        return items
    }

    /// An argument without its label (`default: 5` → `5`).
    static func unlabelled(_ argument: ArraySlice<Token>) -> ArraySlice<Token> {
        let start = argument.startIndex
        if argument.count > 2, case .identifier = argument[start], argument[start + 1] == .symbol(":") {
            return argument.dropFirst(2)
        }
        return argument
    }

    /// A function: its name, parameter names (the names its body uses) and body token range.
    struct Function {
        var name: String
        var parameters: [String]
        var body: Range<Int>
    }

    static func functions(in tokens: [Token]) -> [Function] {
        var functions: [Function] = []
        for index in tokens.indices where tokens[index] == .identifier("func") {
            guard index + 2 < tokens.count, case .identifier(let name) = tokens[index + 1] else { continue }
            var open = index + 2
            if tokens[open] == .symbol("<") {
                var depth = 0
                while open < tokens.count {
                    if tokens[open] == .symbol("<") { depth += 1 }
                    if tokens[open] == .symbol(">") {
                        depth -= 1
                        if depth == 0 { break }
                    }
                    open += 1
                }
                open += 1
            }
            guard open < tokens.count, tokens[open] == .symbol("("), let parameterList = items(tokens, from: open),
                let close = closing(tokens, from: open)
            else { continue }
            let parameters = parameterList.map { parameter -> String in
                let names = parameter.prefix { $0 != .symbol(":") }.compactMap { token -> String? in
                    if case .identifier(let name) = token { return name }
                    return nil
                }
                return names.count >= 2 ? names[1] : (names.first ?? "")
            }
            guard
                let bodyStart = tokens[(close + 1)...].firstIndex(where: {
                    $0 == .symbol("{") || $0 == .identifier("func")
                }),
                tokens[bodyStart] == .symbol("{"), let bodyEnd = closing(tokens, from: bodyStart)
            else { continue }
            functions.append(Function(name: name, parameters: parameters, body: bodyStart..<bodyEnd))
        }
        return functions
    }

    /// The method whose argument list contains the token at `index` (`reader.string(forKey: …)` → `string`).
    static func enclosingCall(_ tokens: [Token], at index: Int) -> String? {
        var depth = 0
        var position = index - 1
        while position > 0 {
            if case .symbol(let character) = tokens[position] {
                if ")]}".contains(character) { depth += 1 }
                if "([{".contains(character) {
                    if depth == 0 {
                        guard character == "(", case .identifier(let name) = tokens[position - 1] else { return nil }
                        return name
                    }
                    depth -= 1
                }
            }
            position -= 1
        }
        return nil
    }

    /// Configuration keys an expression denotes: a literal, `[literal, …]`, `ConfigKey(…)` of those,
    /// or a constant of the file (`let name = "…"`); `parameters` are names that stand for a
    /// caller's key instead.
    enum KeyExpression {
        case keys([String])
        case parameter(String)
        case other
    }

    static func keyExpression(_ expression: ArraySlice<Token>, constants: [String: String]) -> KeyExpression {
        var expression = expression
        let conversions: [[Token]] = [
            [.identifier("ConfigKey"), .symbol("(")], [.symbol("."), .identifier("init"), .symbol("(")],
            [.identifier("ConfigKey"), .symbol("."), .identifier("init"), .symbol("(")],
        ]
        for conversion in conversions where expression.starts(with: conversion) && expression.last == .symbol(")") {
            expression = expression.dropFirst(conversion.count).dropLast()
            break
        }
        let tokens = Array(expression)
        if tokens.count == 1, case .literal(let key) = tokens[0] { return .keys([key]) }
        if tokens.first == .symbol("["), tokens.last == .symbol("]"), tokens.count > 2 {
            var components: [String] = []
            for (offset, token) in tokens.dropFirst().dropLast().enumerated() {
                if offset.isMultiple(of: 2), case .literal(let component) = token {
                    components.append(component)
                } else if !offset.isMultiple(of: 2), token == .symbol(",") {
                    continue
                } else {
                    return .other
                }
            }
            return .keys([components.joined(separator: ".")])
        }
        // `name`, `Self.name`, `Type.name`
        if let last = tokens.last, case .identifier(let name) = last,
            tokens.count == 1 || (tokens.count == 3 && tokens[1] == .symbol("."))
        {
            if let constant = constants[name] { return .keys([constant]) }
            return tokens.count == 1 ? .parameter(name) : .other
        }
        return .other
    }

    /// `let name = "…"` and `let name: Type = "…"` in `tokens` (not `var`s: they change).
    static func constants(in tokens: [Token]) -> [String: String] {
        var constants: [String: String] = [:]
        for index in tokens.indices where tokens[index] == .identifier("let") {
            guard index + 3 < tokens.count, case .identifier(let name) = tokens[index + 1] else { continue }
            var value = index + 2
            if tokens[value] == .symbol(":") {
                guard value + 3 < tokens.count, case .identifier = tokens[value + 1] else { continue }
                value += 2
            }
            guard tokens[value] == .symbol("="), value + 1 < tokens.count, case .literal(let text) = tokens[value + 1]
            else { continue }
            if value + 2 < tokens.count, case .symbol(let next) = tokens[value + 2], ".(+".contains(next) { continue }
            constants[name] = text
        }
        return constants
    }

    /// Where a key is handed to swift-configuration or to a settings helper in `tokens`: each
    /// occurrence's key expression.
    static func keyUses(in tokens: [Token], wrappers: [String: Int], constants: [String: String]) -> [KeyExpression] {
        var uses: [KeyExpression] = []
        for index in tokens.indices {
            if tokens[index] == .identifier("forKey"), index + 1 < tokens.count, tokens[index + 1] == .symbol(":") {
                if let method = enclosingCall(tokens, at: index), nonConfigurationMethods.contains(method) { continue }
                // The argument runs to the next comma or closing bracket at its own depth.
                var end = index + 2
                var depth = 0
                while end < tokens.count {
                    if case .symbol(let character) = tokens[end] {
                        if "([{".contains(character) { depth += 1 }
                        if ")]}".contains(character) {
                            if depth == 0 { break }
                            depth -= 1
                        }
                        if character == ",", depth == 0 { break }
                    }
                    end += 1
                }
                uses.append(keyExpression(tokens[(index + 2)..<end], constants: constants))
            } else if tokens[index] == .identifier("ConfigKey"), index + 1 < tokens.count,
                tokens[index + 1] == .symbol("("),
                !(index >= 2 && tokens[index - 1] == .symbol(":") && tokens[index - 2] == .identifier("forKey")),
                let arguments = items(tokens, from: index + 1), arguments.count == 1
            {
                uses.append(keyExpression(unlabelled(arguments[0]), constants: constants))
            } else if case .identifier(let name) = tokens[index], let position = wrappers[name],
                index + 1 < tokens.count, tokens[index + 1] == .symbol("("),
                !(index > 0 && tokens[index - 1] == .identifier("func")),
                let arguments = items(tokens, from: index + 1), position < arguments.count
            {
                uses.append(keyExpression(unlabelled(arguments[position]), constants: constants))
            }
        }
        return uses
    }

    /// Functions of `files` that pass a parameter on as a configuration key, with that parameter's
    /// position; found repeatedly until no more are, so helpers calling helpers count.
    static func wrappers(in files: Module, known: [String: Int]) -> [String: Int] {
        var wrappers = known
        let candidates = files.flatMap { file in Self.functions(in: file.tokens).map { (file.tokens, $0) } }
        var changed = true
        while changed {
            changed = false
            for (tokens, function) in candidates where wrappers[function.name] == nil {
                let body = Array(tokens[function.body])
                for case .parameter(let name) in keyUses(in: body, wrappers: wrappers, constants: [:]) {
                    if let position = function.parameters.firstIndex(of: name) {
                        wrappers[function.name] = position
                        changed = true
                        break
                    }
                }
            }
        }
        return wrappers
    }

    /// The environment variables one file's tokens read.
    static func names(in tokens: [Token], wrappers: [String: Int]) -> [String] {
        var names: [String] = []
        for case .keys(let keys) in keyUses(in: tokens, wrappers: wrappers, constants: constants(in: tokens)) {
            // A key is words joined by dots; anything else handed to a helper's name-alike is not one.
            names += keys.filter {
                $0.range(of: "^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*$", options: .regularExpression) != nil
            }
            .map(environmentName(forKey:))
        }
        for index in tokens.indices {
            guard index + 3 < tokens.count, case .literal(let name) = tokens[index + 2] else { continue }
            if tokens[index] == .identifier("environment"), tokens[index + 1] == .symbol("["),
                tokens[index + 3] == .symbol("]")
            {
                let assigned =
                    index + 5 < tokens.count && tokens[index + 4] == .symbol("=") && tokens[index + 5] != .symbol("=")
                if !assigned { names.append(name) }
            }
            if tokens[index] == .identifier("getenv") || tokens[index] == .identifier("secure_getenv"),
                tokens[index + 1] == .symbol("("), tokens[index + 3] == .symbol(")")
            {
                names.append(name)
            }
        }
        return names
    }
}
