import Foundation

/// Splits a SQL script into statements so each runs through the extended protocol on its own.
///
/// Understands single-quoted strings, quoted identifiers, dollar-quoted bodies and both comment
/// styles, which is all our migration files use.
enum SQLScript {
    static func statements(in script: String) -> [String] {
        var statements: [String] = []
        var current = ""
        let chars = Array(script)
        var i = 0
        func peek(_ offset: Int) -> Character? { i + offset < chars.count ? chars[i + offset] : nil }
        while i < chars.count {
            let c = chars[i]
            if c == "-", peek(1) == "-" {
                while i < chars.count, chars[i] != "\n" { i += 1 }
                continue
            }
            if c == "/", peek(1) == "*" {
                i += 2
                while i < chars.count, !(chars[i] == "*" && peek(1) == "/") { i += 1 }
                i += 2
                continue
            }
            if c == "'" || c == "\"" {
                current.append(c)
                i += 1
                while i < chars.count {
                    current.append(chars[i])
                    if chars[i] == c {
                        // A doubled quote is an escaped quote, not the end.
                        if peek(1) == c {
                            current.append(c)
                            i += 2
                            continue
                        }
                        i += 1
                        break
                    }
                    i += 1
                }
                continue
            }
            if c == "$", let tag = dollarTag(chars, at: i) {
                current.append(contentsOf: tag)
                i += tag.count
                while i < chars.count {
                    if chars[i] == "$", dollarTag(chars, at: i) == tag {
                        current.append(contentsOf: tag)
                        i += tag.count
                        break
                    }
                    current.append(chars[i])
                    i += 1
                }
                continue
            }
            if c == ";" {
                appendTrimmed(current, to: &statements)
                current = ""
                i += 1
                continue
            }
            current.append(c)
            i += 1
        }
        appendTrimmed(current, to: &statements)
        return statements
    }

    private static func appendTrimmed(_ statement: String, to statements: inout [String]) {
        let trimmed = statement.trimmingCharacters(in: .whitespacesAndNewlines)
        if !trimmed.isEmpty { statements.append(trimmed) }
    }

    /// `$tag$` or `$$` starting at `index`, if there is one.
    private static func dollarTag(_ chars: [Character], at index: Int) -> String? {
        var j = index + 1
        while j < chars.count, chars[j] == "_" || chars[j].isLetter || (chars[j].isNumber && j > index + 1) {
            j += 1
        }
        guard j < chars.count, chars[j] == "$" else { return nil }
        return String(chars[index...j])
    }
}
