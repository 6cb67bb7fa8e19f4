import LatchkeyCore

/// Results that carry secrets shown once (new client secrets): printed, or written to a file readable by
/// the owner only, in which case what is printed leaves them out.
enum SecretOutput {
    static func emit(
        _ result: [String: JSONValue], file: String?, format: OutputFormat, summary: (_ secretsShown: Bool) -> String
    ) throws {
        guard let file else {
            print(format == .json ? PrettyJSON.string(.object(result)) : summary(true))
            return
        }
        try JSONFile.write(PrettyJSON.string(.object(result)), to: file, secret: true)
        switch format {
        case .json: print(PrettyJSON.string(redacted(.object(result))))
        case .table: print(summary(false) + "\ncredentials written to \(file)")
        }
    }

    /// `value` without any `client_secret` member.
    static func redacted(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(let members):
            return .object(members.filter { $0.key != "client_secret" }.mapValues(redacted))
        case .array(let elements): return .array(elements.map(redacted))
        default: return value
        }
    }
}
