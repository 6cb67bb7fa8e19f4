import Foundation

/// A JSON Schema `pattern`: an ECMA-262 regular expression, searched (not anchored) in a string.
///
/// The patterns Latchkey's schemas use (anchors, classes with ranges and `\xHH` escapes, groups,
/// alternation, greedy quantifiers) are compiled into a small backtracking matcher over Unicode
/// scalars, roughly ten times faster than `NSRegularExpression` on short strings — it runs
/// several times per consumed event. Anything outside that subset (lookaround, back-references,
/// lazy quantifiers, ...) falls back to `NSRegularExpression`. `$` follows ECMA-262: end of
/// input only, never before a trailing newline.
public struct SchemaPattern: Sendable {
    public let source: String
    private let engine: Engine

    private enum Engine: Sendable {
        case compiled(PatternNode, anchoredAtStart: Bool)
        case foundation(NSRegularExpressionBox)
    }

    /// Compiles `source`; throws only when neither engine accepts it.
    public init(_ source: String) throws {
        self.source = source
        var parser = PatternParser(source)
        if let node = try? parser.parse() {
            if case .sequence(let items) = node, case .startAnchor? = items.first {
                engine = .compiled(.sequence(Array(items.dropFirst())), anchoredAtStart: true)
            } else {
                engine = .compiled(node, anchoredAtStart: false)
            }
        } else {
            engine = .foundation(NSRegularExpressionBox(try NSRegularExpression(pattern: source)))
        }
    }

    /// Whether the pattern uses the fast built-in matcher (for tests).
    public var isCompiled: Bool {
        if case .compiled = engine { return true }
        return false
    }

    /// True when the pattern matches somewhere in `text`.
    public func matches(_ text: String) -> Bool {
        switch engine {
        case .compiled(let node, let anchored):
            let scalars = Array(text.unicodeScalars)
            let starts = anchored ? 0...0 : 0...scalars.count
            for start in starts where node.match(scalars, start, { _ in true }) {
                return true
            }
            return false
        case .foundation(let box):
            return box.expression.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
        }
    }
}

/// `NSRegularExpression` is immutable and thread-safe, but not marked `Sendable` on every platform.
final class NSRegularExpressionBox: @unchecked Sendable {
    let expression: NSRegularExpression
    init(_ expression: NSRegularExpression) { self.expression = expression }
}

/// A set of Unicode scalars as sorted ranges, possibly negated.
struct ScalarClass: Sendable {
    var ranges: [ClosedRange<UInt32>]
    var negated = false

    func contains(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        var found = false
        for range in ranges where range.contains(value) {
            found = true
            break
        }
        return found != negated
    }

    static let digit = ScalarClass(ranges: [0x30...0x39])
    static let word = ScalarClass(ranges: [0x30...0x39, 0x41...0x5A, 0x5F...0x5F, 0x61...0x7A])
    static let space = ScalarClass(ranges: [
        0x09...0x0D, 0x20...0x20, 0xA0...0xA0, 0x1680...0x1680, 0x2000...0x200A, 0x2028...0x2029,
        0x202F...0x202F, 0x205F...0x205F, 0x3000...0x3000, 0xFEFF...0xFEFF,
    ])
    /// `.`: anything but the ECMA-262 line terminators.
    static let dot = ScalarClass(ranges: [0x0A...0x0A, 0x0D...0x0D, 0x2028...0x2029], negated: true)

    func inverted() -> ScalarClass { ScalarClass(ranges: ranges, negated: !negated) }
}

/// The compiled form of a pattern.
indirect enum PatternNode: Sendable {
    case scalar(ScalarClass)
    case sequence([PatternNode])
    case alternation([PatternNode])
    case repetition(PatternNode, min: Int, max: Int?)
    case startAnchor
    case endAnchor

    /// Matches at `position`, then asks `next` whether the rest of the pattern matches.
    func match(_ input: [Unicode.Scalar], _ position: Int, _ next: (Int) -> Bool) -> Bool {
        switch self {
        case .scalar(let set):
            return position < input.count && set.contains(input[position]) && next(position + 1)
        case .startAnchor:
            return position == 0 && next(position)
        case .endAnchor:
            return position == input.count && next(position)
        case .sequence(let items):
            return Self.matchSequence(items[...], input, position, next)
        case .alternation(let options):
            return options.contains { $0.match(input, position, next) }
        case .repetition(.scalar(let set), let min, let max):
            // Greedy run of one class: count once, then back off one scalar at a time.
            var end = position
            let limit = max.map { Swift.min(input.count, position + $0) } ?? input.count
            while end < limit, set.contains(input[end]) { end += 1 }
            guard end - position >= min else { return false }
            var candidate = end
            while candidate >= position + min {
                if next(candidate) { return true }
                candidate -= 1
            }
            return false
        case .repetition(let node, let min, let max):
            return Self.matchRepetition(node, count: 0, min: min, max: max, input, position, next)
        }
    }

    private static func matchSequence(
        _ items: ArraySlice<PatternNode>, _ input: [Unicode.Scalar], _ position: Int, _ next: (Int) -> Bool
    ) -> Bool {
        guard let first = items.first else { return next(position) }
        return first.match(input, position) { matchSequence(items.dropFirst(), input, $0, next) }
    }

    private static func matchRepetition(
        _ node: PatternNode, count: Int, min: Int, max: Int?, _ input: [Unicode.Scalar], _ position: Int,
        _ next: (Int) -> Bool
    ) -> Bool {
        if max.map({ count < $0 }) ?? true {
            // An iteration that consumes nothing cannot make progress (ECMA-262 empty-check).
            let matchedMore = node.match(input, position) { after in
                after > position
                    && matchRepetition(node, count: count + 1, min: min, max: max, input, after, next)
            }
            if matchedMore { return true }
        }
        return count >= min && next(position)
    }
}

/// Recursive-descent parser for the supported subset; throws on anything else.
struct PatternParser {
    struct Unsupported: Error {}

    private let scalars: [Unicode.Scalar]
    private var index = 0

    init(_ source: String) {
        scalars = Array(source.unicodeScalars)
    }

    mutating func parse() throws -> PatternNode {
        let node = try parseAlternation()
        guard index == scalars.count else { throw Unsupported() }
        return node
    }

    private var current: Unicode.Scalar? { index < scalars.count ? scalars[index] : nil }

    private mutating func parseAlternation() throws -> PatternNode {
        var options = [try parseSequence()]
        while current == "|" {
            index += 1
            options.append(try parseSequence())
        }
        return options.count == 1 ? options[0] : .alternation(options)
    }

    private mutating func parseSequence() throws -> PatternNode {
        var items: [PatternNode] = []
        while let scalar = current, scalar != "|", scalar != ")" {
            if scalar == "^" {
                // Only a leading anchor is supported (no multiline mode, no mid-pattern anchors).
                guard items.isEmpty, index == 0 else { throw Unsupported() }
                index += 1
                items.append(.startAnchor)
                continue
            }
            if scalar == "$" {
                index += 1
                guard current == nil || current == "|" || current == ")" else { throw Unsupported() }
                items.append(.endAnchor)
                continue
            }
            items.append(try parseQuantified(try parseAtom()))
        }
        return items.count == 1 ? items[0] : .sequence(items)
    }

    private mutating func parseAtom() throws -> PatternNode {
        guard let scalar = current else { throw Unsupported() }
        index += 1
        switch scalar {
        case "(":
            if current == "?" {
                // Only non-capturing groups; lookaround and named groups go to the fallback engine.
                guard index + 1 < scalars.count, scalars[index + 1] == ":" else { throw Unsupported() }
                index += 2
            }
            let inner = try parseAlternation()
            guard current == ")" else { throw Unsupported() }
            index += 1
            return inner
        case "[": return .scalar(try parseClass())
        case ".": return .scalar(.dot)
        case "\\": return .scalar(try parseEscape(inClass: false))
        case "*", "+", "?", "{", "}", ")", "]": throw Unsupported()
        default: return .scalar(ScalarClass(ranges: [scalar.value...scalar.value]))
        }
    }

    private mutating func parseQuantified(_ atom: PatternNode) throws -> PatternNode {
        guard let scalar = current else { return atom }
        let bounds: (Int, Int?)
        switch scalar {
        case "*":
            index += 1
            bounds = (0, nil)
        case "+":
            index += 1
            bounds = (1, nil)
        case "?":
            index += 1
            bounds = (0, 1)
        case "{":
            index += 1
            let min = try parseInteger()
            var max: Int? = min
            if current == "," {
                index += 1
                max = current == "}" ? nil : try parseInteger()
            }
            guard current == "}", max.map({ $0 >= min }) ?? true else { throw Unsupported() }
            index += 1
            bounds = (min, max)
        default:
            return atom
        }
        // Lazy (`*?`) and possessive forms are not needed by the schemas.
        if let next = current, next == "?" || next == "+" { throw Unsupported() }
        return .repetition(atom, min: bounds.0, max: bounds.1)
    }

    private mutating func parseInteger() throws -> Int {
        var value = 0
        var digits = 0
        while let scalar = current, ("0"..."9").contains(scalar) {
            value = value * 10 + Int(scalar.value - 0x30)
            digits += 1
            index += 1
            guard value <= 10_000 else { throw Unsupported() }
        }
        guard digits > 0 else { throw Unsupported() }
        return value
    }

    private mutating func parseClass() throws -> ScalarClass {
        var negated = false
        if current == "^" {
            negated = true
            index += 1
        }
        var ranges: [ClosedRange<UInt32>] = []
        while current.map({ $0 != "]" }) ?? false {
            let low = try parseClassMember()
            if current == "-", index + 1 < scalars.count, scalars[index + 1] != "]" {
                index += 1
                let high = try parseClassMember()
                guard low.ranges.count == 1, !low.negated, high.ranges.count == 1, !high.negated,
                    let lowValue = low.ranges.first?.lowerBound, let highValue = high.ranges.first?.lowerBound,
                    low.ranges[0].count == 1, high.ranges[0].count == 1, lowValue <= highValue
                else { throw Unsupported() }
                ranges.append(lowValue...highValue)
            } else {
                guard !low.negated else { throw Unsupported() }
                ranges.append(contentsOf: low.ranges)
            }
        }
        guard current == "]" else { throw Unsupported() }
        index += 1
        return ScalarClass(ranges: ranges, negated: negated)
    }

    private mutating func parseClassMember() throws -> ScalarClass {
        guard let scalar = current else { throw Unsupported() }
        index += 1
        if scalar == "\\" { return try parseEscape(inClass: true) }
        if scalar == "[" { throw Unsupported() }
        return ScalarClass(ranges: [scalar.value...scalar.value])
    }

    private mutating func parseEscape(inClass: Bool) throws -> ScalarClass {
        guard let scalar = current else { throw Unsupported() }
        index += 1
        func single(_ value: UInt32) -> ScalarClass { ScalarClass(ranges: [value...value]) }
        switch scalar {
        case "d": return .digit
        case "D": return ScalarClass.digit.inverted()
        case "w": return .word
        case "W": return ScalarClass.word.inverted()
        case "s": return .space
        case "S": return ScalarClass.space.inverted()
        case "t": return single(0x09)
        case "n": return single(0x0A)
        case "r": return single(0x0D)
        case "f": return single(0x0C)
        case "v": return single(0x0B)
        case "x": return single(try parseHex(digits: 2))
        case "u": return single(try parseHex(digits: 4))
        case "b" where inClass: return single(0x08)
        default:
            // Identity escapes of syntax characters only; \b, \1 and friends need the fallback.
            guard "^$\\.*+?()[]{}|/-".unicodeScalars.contains(scalar) else { throw Unsupported() }
            return single(scalar.value)
        }
    }

    private mutating func parseHex(digits: Int) throws -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<digits {
            guard let scalar = current, let digit = Int(String(scalar), radix: 16) else { throw Unsupported() }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }
}
