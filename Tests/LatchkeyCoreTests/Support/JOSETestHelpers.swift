import Foundation

@testable import LatchkeyCore

/// Signs a hand-built header and payload (for headers `CompactJWS.sign` would never produce).
func signRaw(header: String, payload: String, key: SigningKey) throws -> String {
    let input = b64(header) + "." + b64(payload)
    return input + "." + Base64URL.encode(try key.sign(Data(input.utf8)))
}

/// Replaces one segment of a compact JWS (tampering helper).
func replacingSegment(_ index: Int, of compact: String, with value: String) -> String {
    var parts = compact.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    parts[index] = value
    return parts.joined(separator: ".")
}

/// base64url of a JSON string literal (for hand-built headers and payloads).
func b64(_ json: String) -> String {
    Base64URL.encode(Data(json.utf8))
}
