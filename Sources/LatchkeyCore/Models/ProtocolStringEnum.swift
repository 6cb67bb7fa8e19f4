import Foundation

/// A closed set of protocol strings (grant types, statuses, …) whose decoding of an unknown value
/// fails with a message naming the value and the accepted ones, ready for an `error_description`.
public protocol ProtocolStringEnum: RawRepresentable, CaseIterable, Codable, Sendable, Hashable
where RawValue == String {
    /// What one value is called in error messages, e.g. "grant type".
    static var valueDescription: String { get }
}

extension ProtocolStringEnum {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let raw = try container.decode(String.self)
        guard let value = Self(rawValue: raw) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: Self.unknownValueMessage(raw))
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    /// E.g. `unknown grant type "foo"; expected one of "authorization_code", "refresh_token"`.
    public static func unknownValueMessage(_ raw: String) -> String {
        let accepted = allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
        return "unknown \(valueDescription) \"\(raw)\"; expected one of \(accepted)"
    }
}
