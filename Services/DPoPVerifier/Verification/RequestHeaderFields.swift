import HTTPTypes
import NIOHTTP1

/// Read access to a request's header fields, whichever type carries them: proxy mode reads NIO's
/// `HTTPHeaders` straight from the parser (no conversion per request), check mode Hummingbird's `HTTPFields`.
protocol RequestHeaderFields: Sendable {
    /// Every value of the field `name`, in order (names compare case-insensitively).
    func values(_ name: HTTPField.Name) -> [String]
    /// All values of the field `name` joined with ", " (RFC 9110 §5.3), nil when it is absent.
    func combined(_ name: HTTPField.Name) -> String?
}

extension HTTPFields: RequestHeaderFields {
    func values(_ name: HTTPField.Name) -> [String] { self[values: name] }
    func combined(_ name: HTTPField.Name) -> String? { self[name] }
}

extension HTTPHeaders: RequestHeaderFields {
    func values(_ name: HTTPField.Name) -> [String] { self[name.rawName] }
    func combined(_ name: HTTPField.Name) -> String? {
        let values = self[name.rawName]
        return values.isEmpty ? nil : values.count == 1 ? values[0] : values.joined(separator: ", ")
    }
}
