import Foundation

/// A parsed JWS in compact serialisation (RFC 7515 §7.1): exactly three base64url segments.
///
/// Parsing validates structure, encoding and the header; `verify` checks the signature against an
/// explicit algorithm allow-list; `claims` decodes the payload as a JSON object.
public struct CompactJWS: Sendable {
    public let header: JWSHeader
    /// Decoded payload bytes.
    public let payload: Data
    /// Decoded signature bytes (raw R||S for ECDSA).
    public let signature: Data
    /// ASCII bytes of `BASE64URL(header) '.' BASE64URL(payload)`, the input the signature covers.
    public let signingInput: Data

    /// Default bound on the serialised length; callers with tighter needs (DPoP) pass less.
    public static let defaultMaximumLength = 64 * 1024

    /// Header parameters defined by RFC 7515 §4.1; they may never appear in `crit`.
    private static let registeredHeaderNames: Set<String> = [
        "alg", "jku", "jwk", "kid", "x5u", "x5c", "x5t", "x5t#S256", "typ", "cty", "crit",
    ]

    /// Parses and validates the structure of a compact JWS.
    ///
    /// - Parameter understoodCriticalHeaders: extension parameters this caller processes; any other
    ///   name in `crit` makes the JWS invalid (RFC 7515 §4.1.11). Empty by default.
    public init(
        parsing compact: String, maximumLength: Int = CompactJWS.defaultMaximumLength,
        understoodCriticalHeaders: Set<String> = []
    ) throws(JOSEError) {
        guard compact.utf8.count <= maximumLength else { throw .malformed("JWS exceeds \(maximumLength) bytes") }
        let segments = try Segments(compact)
        let headerBytes = try segments.decodedHeader(of: compact)
        let payloadBytes = try segments.decodedPayload(of: compact)
        let signatureBytes = try segments.decodedSignature(of: compact)

        let headerJSON = Data(headerBytes)
        guard JOSEJSON.looksLikeObject(headerJSON) else { throw .malformed("JWS header is not a JSON object") }
        let members = try JOSEJSON.members(headerBytes, what: "JWS header")
        let fields = try DecodedHeaderFields(members)

        let header = JWSHeader(
            alg: fields.alg, typ: fields.typ, kid: fields.kid, cty: fields.cty,
            jwk: fields.jwk, crit: fields.crit, rawJSON: headerJSON)
        if let crit = fields.crit {
            try Self.checkCritical(crit, members: members, understood: understoodCriticalHeaders)
        }

        self.header = header
        self.payload = Data(payloadBytes)
        self.signature = Data(signatureBytes)
        self.signingInput = Data(compact.utf8[segments.signingInput])
    }

    /// Where the three segments of a compact JWS lie (validated structure, nothing decoded yet).
    struct Segments: Sendable {
        let header: Range<String.Index>
        let payload: Range<String.Index>
        let signature: Range<String.Index>
        /// `BASE64URL(header) '.' BASE64URL(payload)`.
        var signingInput: Range<String.Index> { header.lowerBound..<payload.upperBound }

        init(_ compact: String) throws(JOSEError) {
            // The dots are found in the contiguous UTF-8 bytes (a tight loop over a few hundred bytes per
            // proof); a native string's UTF-8 offsets map back to indexes in constant time.
            var bytes = compact
            let dots = bytes.withUTF8 { utf8 -> (first: Int, second: Int, count: Int) in
                var first = -1
                var second = -1
                var count = 0
                for offset in 0..<utf8.count where utf8[offset] == UInt8(ascii: ".") {
                    if count == 0 { first = offset } else if count == 1 { second = offset }
                    count += 1
                }
                return (first, second, count)
            }
            guard dots.count >= 2 else { throw .malformed("JWS must have three segments") }
            guard dots.count == 2 else { throw .malformed("JWS must have exactly three segments") }
            guard dots.first > 0 else { throw .malformed("JWS header segment is empty") }
            let utf8 = compact.utf8
            let firstDot = utf8.index(utf8.startIndex, offsetBy: dots.first)
            let secondDot = utf8.index(utf8.startIndex, offsetBy: dots.second)
            header = utf8.startIndex..<firstDot
            payload = utf8.index(after: firstDot)..<secondDot
            signature = utf8.index(after: secondDot)..<utf8.endIndex
        }

        func decodedHeader(of compact: String) throws(JOSEError) -> [UInt8] {
            guard let bytes = Base64URL.decodeBytes(compact.utf8[header]) else {
                throw .malformed("JWS header is not strict base64url")
            }
            return bytes
        }

        func decodedPayload(of compact: String) throws(JOSEError) -> [UInt8] {
            guard let bytes = Base64URL.decodeBytes(compact.utf8[payload]) else {
                throw .malformed("JWS payload is not strict base64url")
            }
            return bytes
        }

        func decodedSignature(of compact: String) throws(JOSEError) -> [UInt8] {
            guard let bytes = Base64URL.decodeBytes(compact.utf8[signature]) else {
                throw .malformed("JWS signature is not strict base64url")
            }
            return bytes
        }
    }

    private static func checkCritical(_ crit: [String], members: [String: JSONValue], understood: Set<String>)
        throws(JOSEError)
    {
        guard !crit.isEmpty else { throw .malformed("crit must not be empty") }
        guard Set(crit).count == crit.count else { throw .malformed("crit lists a parameter twice") }
        for name in crit {
            if registeredHeaderNames.contains(name) {
                throw .malformed("crit must not list registered parameter \(name)")
            }
            guard understood.contains(name) else {
                throw .unsupportedCriticalHeader("unsupported critical header parameter \(name)")
            }
        }
        // Only reached when the caller understands every listed name; each must then be present.
        for name in crit where members[name] == nil {
            throw .malformed("critical header parameter \(name) is missing")
        }
    }

    /// Verifies the signature with `key`; the header `alg` must be implemented, allow-listed and of
    /// the key's type. Returns the algorithm used.
    @discardableResult
    public func verify(using key: JWSPublicKey, allowedAlgorithms: Set<JWSAlgorithm>) throws(JOSEError) -> JWSAlgorithm
    {
        let algorithm = try checkedAlgorithm(allowedAlgorithms)
        guard key.supports(algorithm) else {
            throw .keyAlgorithmMismatch("key cannot verify \(algorithm.rawValue)")
        }
        guard key.isValidSignature(signature, for: signingInput, algorithm: algorithm) else {
            throw .invalidSignature("signature does not verify")
        }
        return algorithm
    }

    /// Verifies with a JWK: the JWK must match the algorithm (type, curve, `alg`, `use`) and be public;
    /// with `requireDeclaredAlgorithm` it must also declare `alg` (see `JWSAlgorithm.validate`).
    @discardableResult
    public func verify(
        using jwk: JWK, allowedAlgorithms: Set<JWSAlgorithm>,
        requireDeclaredAlgorithm: Bool = false
    ) throws(JOSEError) -> JWSAlgorithm {
        let algorithm = try checkedAlgorithm(allowedAlgorithms)
        try algorithm.validate(jwk, requireDeclaredAlgorithm: requireDeclaredAlgorithm)
        return try verify(using: try JWSPublicKey(jwk: jwk), allowedAlgorithms: [algorithm])
    }

    /// The header `alg` as an implemented and allowed algorithm.
    public func checkedAlgorithm(_ allowedAlgorithms: Set<JWSAlgorithm>) throws(JOSEError) -> JWSAlgorithm {
        guard let algorithm = header.algorithm else {
            throw .unsupportedAlgorithm("unsupported alg \(header.alg)")
        }
        guard allowedAlgorithms.contains(algorithm) else {
            throw .algorithmNotAllowed("alg \(algorithm.rawValue) is not allowed")
        }
        return algorithm
    }

    /// Decodes the payload as a JSON object into `type`; non-objects and mistyped members are refused.
    public func claims<T: Decodable>(as type: T.Type = T.self) throws(JOSEError) -> T {
        guard JOSEJSON.looksLikeObject(payload) else { throw .malformed("JWS payload is not a JSON object") }
        // Decoded only once the strict parser accepted it, so `JSONDecoder` cannot resolve anything it refuses.
        _ = try JOSEJSON.members(Array(payload), what: "JWS payload")
        do {
            return try JSONDecoder().decode(T.self, from: payload)
        } catch let error as DecodingError {
            throw .malformed("JWS payload: \(JOSEJSON.describe(error))")
        } catch let error as JOSEError {
            throw error
        } catch {
            throw .malformed("JWS payload is not valid JSON")
        }
    }

    /// The payload as a JSON dictionary.
    public func payloadObject() throws(JOSEError) -> [String: Any] {
        try JOSEJSON.parse(payload, what: "payload")
    }
}

extension CompactJWS {
    /// Signs `payload` bytes and returns the compact serialisation.
    public static func sign(
        payload: Data, using key: SigningKey,
        header parameters: JWSHeaderParameters = JWSHeaderParameters()
    ) throws(JOSEError) -> String {
        let header = EncodedHeader(
            alg: key.algorithm.rawValue, typ: parameters.typ, kid: parameters.kid,
            cty: parameters.cty, jwk: parameters.jwk?.publicJWK)
        let headerJSON: Data
        do { headerJSON = try JOSEJSON.encode(header) } catch {
            throw .malformed("cannot encode JWS header")
        }
        let signingInput = Base64URL.encode(headerJSON) + "." + Base64URL.encode(payload)
        let signature = try key.sign(Data(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }

    /// Encodes `claims` as JSON and signs them.
    public static func sign<Claims: Encodable>(
        claims: Claims, using key: SigningKey,
        header parameters: JWSHeaderParameters = JWSHeaderParameters()
    ) throws(JOSEError) -> String {
        let payload: Data
        do { payload = try JOSEJSON.encode(claims) } catch {
            throw .malformed("cannot encode JWS claims")
        }
        return try sign(payload: payload, using: key, header: parameters)
    }
}
