import NIOHTTP1
import Testing

@testable import LatchkeyServer

@Suite struct HTTPRequestHeadRulesTests {
    func head(_ fields: [(String, String)], method: HTTPMethod = .POST, version: HTTPVersion = .http1_1)
        -> HTTPRequestHead
    {
        HTTPRequestHead(version: version, method: method, uri: "/x", headers: HTTPHeaders(fields))
    }

    func status(_ head: HTTPRequestHead) -> UInt? {
        switch HTTPRequestHeadRules.check(head) {
        case .success: nil
        case .failure(let refusal): refusal.status.code
        }
    }

    @Test func hostMustBeOneHostAndPort() {
        for valid in [
            "example.com", "API.Example.com:8443", "127.0.0.1", "127.0.0.1:80", "[::1]", "[::1]:8080",
            "[v1.fe80::a+en1]", "xn--bcher-kva.example", "a%2Db.example", "host:", "",
        ] {
            #expect(HTTPRequestHeadRules.isValidHost(valid), "\(valid)")
        }
        for invalid in [
            "user@example.com", "example.com/path", "example.com?x", "example.com#x", "exa mple.com",
            "example.com:99999", "example.com:123456", "example.com:8o", "[::1", "[]", "[::1]x", "a%2", "a%zz",
            "example.com:80:80", "\"example.com\"", "exa\\mple.com",
        ] {
            #expect(!HTTPRequestHeadRules.isValidHost(invalid), "\(invalid)")
        }
        #expect(status(head([("Host", "example.com")])) == nil)
        #expect(status(head([])) == 400)
        #expect(status(head([], version: .http1_0)) == nil)
        #expect(status(head([("Host", "a.example"), ("host", "a.example")])) == 400)
        #expect(status(head([("Host", "a.example"), ("Host", "b.example")], version: .http1_0)) == 400)
        #expect(status(head([("Host", "user@a.example")])) == 400)
    }

    @Test func transferCodingsOtherThanASingleFinalChunkedAreRefused() {
        let host = ("Host", "a.example")
        #expect(status(head([host, ("Transfer-Encoding", "chunked")])) == nil)
        #expect(status(head([host, ("Transfer-Encoding", " Chunked ")])) == nil)
        #expect(status(head([host, ("Transfer-Encoding", "xchunked")])) == 501)
        #expect(status(head([host, ("Transfer-Encoding", "gzip, chunked")])) == 501)
        #expect(status(head([host, ("Transfer-Encoding", "chunked, gzip")])) == 400)
        #expect(status(head([host, ("Transfer-Encoding", "chunked"), ("Transfer-Encoding", "chunked")])) == 400)
        #expect(status(head([host, ("Transfer-Encoding", "chunked"), ("Content-Length", "3")])) == 400)
        #expect(status(head([host, ("Transfer-Encoding", "chunked")], version: .http1_0)) == 400)
        #expect(status(head([host, ("Transfer-Encoding", "")])) == 400)
        #expect(status(head([host], method: .CONNECT)) == 501)
    }

    @Test func framingTellsWhetherTheConnectionEndsAfterTheAnswer() throws {
        let host = ("Host", "a.example")
        func framing(_ head: HTTPRequestHead) throws -> HTTPRequestHeadRules.Framing {
            try HTTPRequestHeadRules.check(head).get()
        }
        #expect(
            try framing(head([host, ("Content-Length", "12")]))
                == .init(contentLength: 12, closesConnection: false, expectsContinue: false))
        #expect(try framing(head([host, ("Connection", "close")])).closesConnection)
        #expect(try framing(head([], version: .http1_0)).closesConnection)
        #expect(try !framing(head([("Connection", "keep-alive")], version: .http1_0)).closesConnection)
        #expect(try framing(head([host, ("Connection", "keep-alive, Upgrade"), ("Upgrade", "h2c")])).closesConnection)
        #expect(try !framing(head([host, ("Upgrade", "h2c")])).closesConnection)
        #expect(try framing(head([host, ("Expect", "100-continue")])).expectsContinue)
    }
}
