import Foundation
import Hummingbird
import LatchkeyCore

/// Encodes the `ResponseEncodable` answers of every service: Latchkey's JSON (sorted keys, RFC 3339
/// dates, unescaped `/`), never cached because admin and registration answers may carry a credential
/// shown once. Handlers set another status with `EditedResponse`.
public struct LatchkeyResponseEncoder: ResponseEncoder {
    public init() {}

    public func encode(_ value: some Encodable, from request: Request, context: some RequestContext) throws -> Response
    {
        Response(
            status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: try LatchkeyJSON.encode(value))))
    }
}
