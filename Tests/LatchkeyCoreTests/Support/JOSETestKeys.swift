import Foundation

@testable import LatchkeyCore

/// Keys shared across tests; RSA generation is slow in debug builds, so each is made once.
enum JOSETestKeys {
    static let es256 = try! SigningKey.generate(.es256)
    static let es384 = try! SigningKey.generate(.es384)
    static let rs256 = try! SigningKey.generate(.rs256)
    static let ps256 = SigningKey(algorithm: .ps256, backing: rs256.backing)
    static let edDSA = try! SigningKey.generate(.edDSA)

    static func key(for algorithm: JWSAlgorithm) -> SigningKey {
        switch algorithm {
        case .es256: return es256
        case .es384: return es384
        case .rs256: return rs256
        case .ps256: return ps256
        case .edDSA: return edDSA
        }
    }
}
