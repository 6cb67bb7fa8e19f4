import Foundation
import HTTPTypes
import Hummingbird
import LatchkeyCore
import LatchkeyServer
import NIOCore
import Testing

@testable import TokenService

/// How the token endpoint reads client credentials from `Authorization: Basic` (RFC 6749 §2.3.1: each half
/// form-urlencoded, then base64) and from the form.
struct TokenEndpointCredentialsTests {
    private func request(authorization: String?) -> Request {
        var fields = HTTPFields()
        if let authorization { fields[.authorization] = authorization }
        let head = HTTPRequest(
            method: .post, scheme: "http", authority: "localhost", path: "/token", headerFields: fields)
        return Request(head: head, body: .init(buffer: ByteBuffer()))
    }

    private func basic(_ raw: String, padding: String = "") -> String {
        "Basic \(padding)\(Data(raw.utf8).base64EncodedString())\(padding)"
    }

    private func presented(_ authorization: String?, form: String = "grant_type=client_credentials") throws
        -> TokenEndpointAuthentication.Presented
    {
        try TokenEndpointAuthentication.credentials(
            request: request(authorization: authorization), form: try FormParameters.parse(form))
    }

    @Test func basicHalvesAreFormDecoded() throws {
        let credentials = try presented(basic("app%3Aone:p%2Bq+r%25s%C3%A9"))
        #expect(credentials.clientID == "app:one")
        #expect(credentials.secret == "p+q r%sé")
        #expect(credentials.method == .clientSecretBasic)
    }

    @Test func plainBasicCredentialsAndOptionalWhitespaceAreAccepted() throws {
        for header in [
            basic("svc:s3cr3t"), basic("svc:s3cr3t", padding: " \t "), "basic \(basic("svc:s3cr3t").dropFirst(6))",
        ] {
            let credentials = try presented(header)
            #expect(credentials.clientID == "svc")
            #expect(credentials.secret == "s3cr3t")
        }
        // Only the first colon separates: the secret may contain more.
        #expect(try presented(basic("svc:a:b")).secret == "a:b")
        #expect(try presented(basic("svc:")).secret == "")
    }

    @Test func malformedBasicCredentialsAreInvalidClient() {
        let malformed = [
            "Basic", "Basic !!!not-base64!!!", basic("no-colon"), basic(":secret"), basic("svc%3:x"),
            basic("svc:%zz"), basic("svc%00:x"), basic("svc:%00"), basic("svc:%C3"),
            "Basic \(Data([0x73, 0xFF, 0x3A, 0x78]).base64EncodedString())", "Bearer abc",
        ]
        for header in malformed {
            do {
                _ = try presented(header)
                Issue.record("accepted \(header)")
            } catch let error as OAuthError {
                #expect(error.status == .unauthorized, "\(header)")
                #expect(error.code == "invalid_client", "\(header)")
            } catch {
                Issue.record("unexpected error \(error) for \(header)")
            }
        }
    }

    @Test func basicTogetherWithAnotherMethodOrADifferentClientIDIsInvalidRequest() {
        for form in ["client_secret=x", "client_assertion=x", "client_id=other"] {
            #expect(throws: OAuthError.self) {
                try presented(basic("svc:s"), form: "grant_type=client_credentials&\(form)")
            }
        }
        #expect(throws: Never.self) {
            try presented(basic("svc:s"), form: "grant_type=client_credentials&client_id=svc")
        }
    }
}
