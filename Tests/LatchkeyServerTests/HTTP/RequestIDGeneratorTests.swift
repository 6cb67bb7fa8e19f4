import Foundation
import HTTPTypes
import Testing

@testable import LatchkeyServer

@Suite struct RequestIDGeneratorTests {
    @Test func idsAreLowerCaseVersion4UUIDsAndAcceptedAsRequestIDs() throws {
        var generator = RequestIDGenerator()
        for _ in 0..<1_000 {
            let id = generator.next()
            let parsed = try #require(UUID(uuidString: id), "\(id) is not a UUID")
            #expect(parsed.uuidString.lowercased() == id)
            let bytes = parsed.uuid
            #expect(bytes.6 >> 4 == 4, "version nibble of \(id)")
            #expect(bytes.8 >> 6 == 0b10, "variant bits of \(id)")
            #expect(RequestIDMiddleware<LatchkeyRequestContext>.isAcceptable(id))
        }
    }

    @Test func idsDoNotRepeatAndGeneratorsAreSeededIndependently() {
        var first = RequestIDGenerator()
        var second = RequestIDGenerator()
        var seen = Set<String>()
        for _ in 0..<50_000 {
            seen.insert(first.next())
            seen.insert(second.next())
        }
        #expect(seen.count == 100_000)
    }

    @Test func aSeededGeneratorIsDeterministic() {
        var a = RequestIDGenerator(seed: 42)
        var b = RequestIDGenerator(seed: 42)
        #expect((0..<10).map { _ in a.next() } == (0..<10).map { _ in b.next() })
        #expect(RequestIDs.headerName.rawName == "X-Request-Id")
    }
}
