import Crypto
import Foundation

/// A DPoP proof that passed every check; `jkt` is what access and refresh tokens get bound to.
public struct DPoPVerifiedProof: Sendable, Hashable {
    /// RFC 7638 SHA-256 thumbprint of `jwk`.
    public let jkt: String
    /// The proof's public key (public members only).
    public let jwk: JWK
    public let algorithm: JWSAlgorithm
    public let jti: String
    public let iat: Int64
    public let htm: String
    /// `htu` as sent in the proof.
    public let htu: String
    public let nonce: String?
}

/// Verifies DPoP proofs (RFC 9449 §4.3) at the token endpoint and in front of resources.
///
/// Checks, in order: exactly one `DPoP` header, size bound, compact JWS, `typ` = `dpop+jwt`,
/// allow-listed asymmetric `alg` matching a public-only `jwk`, signature, typed claims, `htm`,
/// normalised `htu`, `iat` window, `nonce` (when required), `ath` and `cnf.jkt` (when an access
/// token is presented) and finally `jti` replay. Replay is recorded last so that a proof that fails
/// any other check never occupies the cache or blocks a later legitimate proof.
public struct DPoPProofVerifier: Sendable {
    /// How server nonces are enforced.
    public enum NonceMode: Sendable, Hashable {
        /// Nonces are not checked (a `nonce` claim is ignored).
        case disabled
        /// A valid `nonce` is required; missing or stale → `use_dpop_nonce`.
        case required
        /// Checked only when the proof carries one (for gradual roll-out).
        case validateIfPresent
    }

    /// Verifier settings.
    public struct Configuration: Sendable {
        public var allowedAlgorithms: Set<JWSAlgorithm>
        /// Accepted |now − iat|, in seconds (inclusive); also the replay-cache lifetime after `iat`.
        public var iatWindowSeconds: Int64
        /// Largest accepted proof, in bytes of the header value.
        public var maxProofBytes: Int
        public var nonceMode: NonceMode

        public init(
            allowedAlgorithms: Set<JWSAlgorithm> = Set(JWSAlgorithm.allCases), iatWindowSeconds: Int64 = 60,
            maxProofBytes: Int = 8 * 1024, nonceMode: NonceMode = .disabled
        ) {
            self.allowedAlgorithms = allowedAlgorithms
            self.iatWindowSeconds = iatWindowSeconds
            self.maxProofBytes = maxProofBytes
            self.nonceMode = nonceMode
        }
    }

    public static let proofType = "dpop+jwt"

    public let configuration: Configuration
    private let replayCache: any DPoPReplayCache
    /// The same cache when it is the in-process one: lets `verifySynchronously` record replays
    /// without suspending (the sidecar verifies on its event loop).
    private let synchronousReplayCache: InMemoryDPoPReplayCache?
    private let nonceSource: (any DPoPNonceSource)?
    private let clock: any WallClock
    private let headers: DPoPProofHeaderCache

    /// A nonce source is required unless `nonceMode` is `.disabled`. `headerCacheEntries` bounds the
    /// memo of checked proof headers (one per active client key).
    public init(
        configuration: Configuration = Configuration(), replayCache: any DPoPReplayCache,
        nonceSource: (any DPoPNonceSource)? = nil, clock: any WallClock = SystemWallClock(),
        headerCacheEntries: Int = 4_096
    ) {
        precondition(configuration.nonceMode == .disabled || nonceSource != nil, "nonce mode needs a nonce source")
        precondition(configuration.iatWindowSeconds > 0, "iat window must be positive")
        self.configuration = configuration
        self.replayCache = replayCache
        self.synchronousReplayCache = replayCache as? InMemoryDPoPReplayCache
        self.nonceSource = nonceSource
        self.clock = clock
        self.headers = DPoPProofHeaderCache(maxEntries: headerCacheEntries)
    }

    /// Verifies the proof(s) sent with one request.
    ///
    /// - Parameters:
    ///   - headerValues: every `DPoP` header value of the request (exactly one is allowed).
    ///   - method: the request method, compared case-sensitively with `htm`.
    ///   - url: the request URL as the client addressed it (scheme, host, port, path); query and
    ///     fragment are ignored.
    ///   - accessToken: the presented access token at resources (`ath` required), `nil` at the token endpoint.
    ///   - expectedJKT: the token's `cnf.jkt`, when bound; must equal the proof key's thumbprint.
    public func verify(
        headerValues: [String], method: String, url: String, accessToken: String? = nil,
        expectedJKT: String? = nil
    ) async throws(DPoPError) -> DPoPVerifiedProof {
        let proof = try check(
            headerValues: headerValues, method: method, url: url,
            accessTokenHash: accessToken.map(Self.accessTokenHash), expectedJKT: expectedJKT)
        guard
            await replayCache.insertIfAbsent(
                jkt: proof.jkt, jti: proof.jti, expiresAt: proof.iat + configuration.iatWindowSeconds)
        else { throw .invalidProof(Self.replayReason) }
        return proof
    }

    /// True when `verifySynchronously` may be used (the replay cache is the in-process one).
    public var canVerifySynchronously: Bool { synchronousReplayCache != nil }

    /// `verify` without suspending, for callers on an event loop; needs an ``InMemoryDPoPReplayCache``.
    public func verifySynchronously(
        headerValues: [String], method: String, url: String, accessToken: String? = nil,
        expectedJKT: String? = nil
    ) throws(DPoPError) -> DPoPVerifiedProof {
        try verifySynchronously(
            headerValues: headerValues, method: method, url: url,
            accessTokenHash: accessToken.map(Self.accessTokenHash), expectedJKT: expectedJKT)
    }

    /// `verifySynchronously` for a caller that knows the token's `ath` already (``accessTokenHash(_:)``,
    /// worked out once per token rather than once per request).
    public func verifySynchronously(
        headerValues: [String], method: String, url: String, accessTokenHash: String?, expectedJKT: String? = nil
    ) throws(DPoPError) -> DPoPVerifiedProof {
        guard let synchronousReplayCache else {
            preconditionFailure("verifySynchronously needs an InMemoryDPoPReplayCache")
        }
        let proof = try check(
            headerValues: headerValues, method: method, url: url, accessTokenHash: accessTokenHash,
            expectedJKT: expectedJKT)
        guard
            synchronousReplayCache.insertNow(
                jkt: proof.jkt, jti: proof.jti,
                expiresAt: proof.iat + configuration.iatWindowSeconds)
        else { throw .invalidProof(Self.replayReason) }
        return proof
    }

    /// The reason given for a replayed `jti`.
    public static let replayReason = "jti has already been used"

    /// Every check except replay, which the caller records last so that a proof failing any other
    /// check never occupies the cache.
    private func check(
        headerValues: [String], method: String, url: String, accessTokenHash expected: String?,
        expectedJKT: String?
    ) throws(DPoPError) -> DPoPVerifiedProof {
        guard headerValues.count == 1, let proof = headerValues.first else {
            throw .invalidProof(headerValues.isEmpty ? "missing DPoP header" : "more than one DPoP header")
        }
        guard proof.utf8.count <= configuration.maxProofBytes else {
            throw .invalidProof("DPoP proof exceeds \(configuration.maxProofBytes) bytes")
        }

        let segments: CompactJWS.Segments
        do {
            segments = try CompactJWS.Segments(proof)
        } catch {
            throw .invalidProof(error.reason)
        }
        let headerSegment = String(proof[segments.header])
        let cached = headers.header(for: headerSegment)
        let header: DPoPProofHeader
        if let cached { header = cached } else { header = try checkHeader(proof) }

        let payload: [UInt8]
        let signature: [UInt8]
        do throws(JOSEError) {
            payload = try segments.decodedPayload(of: proof)
            signature = try segments.decodedSignature(of: proof)
        } catch {
            throw .invalidProof(error.reason)
        }
        var compact = proof
        let signatureVerifies = compact.withUTF8 { bytes in
            // The signing input in place: no copy of the proof's first two segments.
            let utf8 = proof.utf8
            let start = utf8.distance(from: utf8.startIndex, to: segments.signingInput.lowerBound)
            let end = utf8.distance(from: utf8.startIndex, to: segments.signingInput.upperBound)
            return header.key.isValidSignature(
                signature, for: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[start..<end]),
                algorithm: header.algorithm)
        }
        guard signatureVerifies else {
            throw .invalidProof("signature does not verify")
        }
        if cached == nil { headers.remember(header, for: headerSegment) }

        let claims: DPoPProofClaims
        do {
            claims = try DPoPProofClaims(json: payload)
        } catch {
            throw .invalidProof(error.reason)
        }
        guard !claims.jti.isEmpty else { throw .invalidProof("jti must not be empty") }

        guard claims.htm == method else { throw .invalidProof("htm does not match the request method") }
        let proofHTU: String
        let requestHTU: String
        do {
            proofHTU = try HTUNormalizer.normalize(claims.htu)
        } catch {
            throw .invalidProof("htu is not an http(s) URL")
        }
        do {
            requestHTU = try HTUNormalizer.normalize(url)
        } catch {
            throw .invalidProof("request URL cannot be normalised")
        }
        guard proofHTU == requestHTU else { throw .invalidProof("htu does not match the request URL") }

        let now = Int64(clock.now().timeIntervalSince1970.rounded(.down))
        let window = configuration.iatWindowSeconds
        // Written as two comparisons so an extreme iat cannot overflow a subtraction.
        guard claims.iat >= now - window, claims.iat <= now + window else {
            throw .invalidProof("iat is outside the acceptance window")
        }

        try checkNonce(claims.nonce)

        if let expected {
            guard let ath = claims.ath else { throw .invalidProof("ath is required with an access token") }
            guard ConstantTime.equals(expected, ath) else { throw .invalidProof("ath does not match the access token") }
        }

        if let expectedJKT, !ConstantTime.equals(expectedJKT, header.jkt) {
            throw .invalidProof("proof key does not match the token's cnf.jkt")
        }
        return DPoPVerifiedProof(
            jkt: header.jkt, jwk: header.jwk, algorithm: header.algorithm, jti: claims.jti, iat: claims.iat,
            htm: claims.htm, htu: claims.htu, nonce: claims.nonce)
    }

    /// The full header checks (a header not seen before): strict JWS structure and header JSON,
    /// `typ`, allow-listed `alg`, a public-only `jwk` of the algorithm's type, and its thumbprint.
    private func checkHeader(_ proof: String) throws(DPoPError) -> DPoPProofHeader {
        let jws: CompactJWS
        do {
            jws = try CompactJWS(parsing: proof, maximumLength: configuration.maxProofBytes)
        } catch {
            throw .invalidProof(error.reason)
        }
        guard jws.header.typ == Self.proofType else { throw .invalidProof("typ must be dpop+jwt") }
        do throws(JOSEError) {
            let algorithm = try jws.checkedAlgorithm(configuration.allowedAlgorithms)
            guard let jwk = jws.header.jwk else { throw JOSEError.malformed("jwk header is missing") }
            guard !jwk.hasPrivateMembers else { throw JOSEError.invalidKey("jwk contains private key material") }
            try algorithm.validate(jwk)
            return DPoPProofHeader(
                algorithm: algorithm, key: try JWSPublicKey(jwk: jwk), jwk: jwk.publicJWK,
                jkt: try jwk.thumbprint())
        } catch {
            throw .invalidProof(error.reason)
        }
    }

    /// RFC 9449 §4.2 `ath`: base64url SHA-256 of the token's ASCII bytes (hashed in place, no copy).
    public static func accessTokenHash(_ token: String) -> String {
        var token = token
        return token.withUTF8 { Base64URL.encode(SHA256.hash(data: UnsafeRawBufferPointer($0))) }
    }

    private func checkNonce(_ nonce: String?) throws(DPoPError) {
        guard let nonceSource else { return }
        switch configuration.nonceMode {
        case .disabled:
            return
        case .required:
            guard let nonce else { throw .useNonce("a DPoP nonce is required") }
            guard nonceSource.isValid(nonce) else { throw .useNonce("the DPoP nonce is invalid or expired") }
        case .validateIfPresent:
            if let nonce, !nonceSource.isValid(nonce) { throw .useNonce("the DPoP nonce is invalid or expired") }
        }
    }
}
