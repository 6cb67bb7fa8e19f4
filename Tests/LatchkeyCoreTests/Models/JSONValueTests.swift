import Foundation
import Testing

@testable import LatchkeyCore

@Suite struct JSONValueTests {
    @Test func decodesEveryKindOfValue() throws {
        let text = #"{"a":null,"b":true,"c":1,"d":1.5,"e":"x","f":[1,"y",false],"g":{"h":{}}}"#
        let value = try LatchkeyJSON.decode(JSONValue.self, from: Data(text.utf8))
        #expect(value["a"] == .null)
        #expect(value["b"] == true)
        #expect(value["c"] == 1)
        #expect(value["d"]?.doubleValue == 1.5)
        #expect(value["e"]?.stringValue == "x")
        #expect(value["f"] == [1, "y", false])
        #expect(value["g"]?["h"] == [:])
        #expect(value["missing"] == nil)
        #expect(String(decoding: try LatchkeyJSON.encode(value), as: UTF8.self) == text)
    }

    @Test func booleansAndNumbersStayDistinct() throws {
        let value = try LatchkeyJSON.decode([JSONValue].self, from: Data("[true,1,0,false]".utf8))
        #expect(value == [.bool(true), .number(1), .number(0), .bool(false)])
    }

    @Test func keepsAJWKSetIntact() throws {
        let jwks: JSONValue = [
            "keys": [
                [
                    "kty": "EC", "crv": "P-256", "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
                    "y": "x_FEzRjmHjzgpTeXRMKzSVsgImJwfKZDvHFtdP4fU6E", "kid": "k1", "use": "sig",
                ]
            ]
        ]
        let metadata = ClientMetadata(tokenEndpointAuthMethod: .privateKeyJWT, jwks: jwks)
        let decoded = try LatchkeyJSON.decode(ClientMetadata.self, from: LatchkeyJSON.encode(metadata))
        #expect(decoded.jwks == jwks)
    }

    @Test func convertsEncodableValues() throws {
        let actor = EventActor.admin("alice")
        #expect(try JSONValue(encoding: actor) == ["type": "admin", "id": "alice"])
        #expect(try JSONValue(encoding: actor).decode(as: EventActor.self) == actor)
    }
}
