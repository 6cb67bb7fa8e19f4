import Foundation
import LatchkeyCore

/// Locates and decodes the shared test vectors (`/work/shared/vectors` in the workspace).
///
/// `LATCHKEY_VECTORS_DIR` wins; otherwise `<repo root>/../shared/vectors`, where the repo root is
/// the nearest ancestor of this file holding `Package.swift`. A missing folder fails the tests.
public enum SharedVectors {
    public static func directory() throws -> URL {
        if let override = ProcessInfo.processInfo.environment["LATCHKEY_VECTORS_DIR"], !override.isEmpty {
            return URL(fileURLWithPath: override, isDirectory: true)
        }
        var candidate = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while candidate.path != "/" {
            if FileManager.default.fileExists(atPath: candidate.appendingPathComponent("Package.swift").path) {
                return candidate.deletingLastPathComponent().appendingPathComponent("shared/vectors", isDirectory: true)
            }
            candidate = candidate.deletingLastPathComponent()
        }
        throw VectorError.missing("no Package.swift above \(#filePath)")
    }

    public static func load<T: Decodable>(_ name: String, as type: T.Type) throws -> T {
        let url = try directory().appendingPathComponent(name)
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw VectorError.missing("vector file \(url.path) is missing (set LATCHKEY_VECTORS_DIR)")
        }
        return try JSONDecoder().decode(T.self, from: Data(contentsOf: url))
    }

    public enum VectorError: Error, CustomStringConvertible {
        case missing(String)
        public var description: String {
            switch self {
            case .missing(let message): return message
            }
        }
    }

    public struct Request: Decodable, Sendable {
        public let method: String
        public let url: String
    }

    public struct DPoPVector: Decodable, Sendable {
        public let name: String
        public let proof: String
        public let request: Request
        public let accessToken: String?
        public let expectedJKT: String?
        public let requiredNonce: String?
        public let now: Int64
        public let iatWindowSeconds: Int64
        public let expected: String

        public init(
            name: String, proof: String, request: Request, accessToken: String?, expectedJKT: String?,
            requiredNonce: String?, now: Int64, iatWindowSeconds: Int64, expected: String
        ) {
            self.name = name
            self.proof = proof
            self.request = request
            self.accessToken = accessToken
            self.expectedJKT = expectedJKT
            self.requiredNonce = requiredNonce
            self.now = now
            self.iatWindowSeconds = iatWindowSeconds
            self.expected = expected
        }

        enum CodingKeys: String, CodingKey {
            case name, proof, request, now, expected
            case accessToken = "access_token"
            case expectedJKT = "expected_jkt"
            case requiredNonce = "required_nonce"
            case iatWindowSeconds = "iat_window_seconds"
        }
    }

    public struct ReplayVector: Decodable, Sendable {
        public let proof: String
        public let request: Request
        public let accessToken: String?
        public let expectedJKT: String?

        enum CodingKeys: String, CodingKey {
            case proof, request
            case accessToken = "access_token"
            case expectedJKT = "expected_jkt"
        }
    }

    public struct DPoPFile: Decodable, Sendable {
        public let clockNow: Int64
        public let iatWindowSeconds: Int64
        public let vectors: [DPoPVector]
        public let replay: ReplayVector?

        enum CodingKeys: String, CodingKey {
            case vectors, replay
            case clockNow = "clock_now"
            case iatWindowSeconds = "iat_window_seconds"
        }
    }

    public struct PKCEValid: Decodable, Sendable {
        public let name: String
        public let codeVerifier: String
        public let codeChallenge: String
        public let method: String

        enum CodingKeys: String, CodingKey {
            case name, method
            case codeVerifier = "code_verifier"
            case codeChallenge = "code_challenge"
        }
    }

    public struct PKCEInvalid: Decodable, Sendable {
        public let name: String
        public let codeVerifier: String

        enum CodingKeys: String, CodingKey {
            case name
            case codeVerifier = "code_verifier"
        }
    }

    public struct PKCEFile: Decodable, Sendable {
        public let valid: [PKCEValid]
        public let invalidVerifiers: [PKCEInvalid]

        enum CodingKeys: String, CodingKey {
            case valid
            case invalidVerifiers = "invalid_verifiers"
        }
    }

    public struct ThumbprintVector: Decodable, Sendable {
        public let name: String
        public let jwk: JWK
        public let jkt: String
    }
}
