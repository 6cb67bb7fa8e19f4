import AsyncHTTPClient
import Foundation
import HTTPTypes
import LatchkeyServer
import NIOCore
import NIOHTTP1

/// Requests to a service's management port (`/healthz`, `/readyz`, `/metrics`, `/openapi.json`) over
/// real HTTP. The listener starts with the application's services, so the first request waits until it
/// accepts connections.
public struct ManagementClient: Sendable {
    public struct Response: Sendable {
        public let status: HTTPResponse.Status
        public let headers: HTTPFields
        public let body: ByteBuffer
        public var text: String { String(buffer: body) }
    }

    public let port: Int

    public init(port: Int) { self.port = port }
    public init(_ settings: ServiceSettings) { self.port = settings.managementPort }

    public func execute(uri: String, method: HTTPRequest.Method = .get, timeout: Duration = .seconds(30)) async throws
        -> Response
    {
        let deadline = ContinuousClock.now + timeout
        while true {
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(uri)")
            request.method = .init(rawValue: method.rawValue)
            do {
                let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
                var headers = HTTPFields()
                for (name, value) in response.headers {
                    if let field = HTTPField.Name(name) { headers.append(HTTPField(name: field, value: value)) }
                }
                let body = try await response.body.collect(upTo: 16 << 20)
                return Response(
                    status: HTTPResponse.Status(code: Int(response.status.code)), headers: headers, body: body)
            } catch {
                guard ContinuousClock.now < deadline else { throw error }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    public func execute<Value>(
        uri: String, method: HTTPRequest.Method = .get, _ check: (Response) async throws -> Value
    ) async throws -> Value {
        try await check(execute(uri: uri, method: method))
    }
}
