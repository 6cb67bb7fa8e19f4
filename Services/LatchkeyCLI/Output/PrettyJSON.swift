import LatchkeyCore

/// Indented JSON with sorted members, so exports diff cleanly in Git.
enum PrettyJSON {
    static func string(_ value: JSONValue) -> String {
        var output: [UInt8] = []
        write(value, indent: 0, into: &output)
        return String(decoding: output, as: UTF8.self)
    }

    private static func write(_ value: JSONValue, indent: Int, into output: inout [UInt8]) {
        let inner = [UInt8](repeating: UInt8(ascii: " "), count: (indent + 1) * 2)
        let outer = [UInt8](repeating: UInt8(ascii: " "), count: indent * 2)
        switch value {
        case .array(let elements) where !elements.isEmpty:
            output.append(contentsOf: Array("[\n".utf8))
            for (index, element) in elements.enumerated() {
                output.append(contentsOf: inner)
                write(element, indent: indent + 1, into: &output)
                output.append(contentsOf: Array((index == elements.count - 1 ? "\n" : ",\n").utf8))
            }
            output.append(contentsOf: outer)
            output.append(UInt8(ascii: "]"))
        case .object(let members) where !members.isEmpty:
            output.append(contentsOf: Array("{\n".utf8))
            let sorted = members.sorted { $0.key < $1.key }
            for (index, member) in sorted.enumerated() {
                output.append(contentsOf: inner)
                CanonicalJSON.writeString(member.key, into: &output)
                output.append(contentsOf: Array(": ".utf8))
                write(member.value, indent: indent + 1, into: &output)
                output.append(contentsOf: Array((index == sorted.count - 1 ? "\n" : ",\n").utf8))
            }
            output.append(contentsOf: outer)
            output.append(UInt8(ascii: "}"))
        default:
            CanonicalJSON.write(value, into: &output)
        }
    }
}
