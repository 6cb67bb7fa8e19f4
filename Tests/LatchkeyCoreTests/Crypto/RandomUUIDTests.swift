import Foundation
import Testing

@testable import LatchkeyCore

@Suite struct RandomUUIDTests {
    @Test func idsAreVersion4WithTheRFC9562Variant() {
        for _ in 0..<2_000 {
            let id = RandomUUID.make().uuid
            #expect(id.6 >> 4 == 4)
            #expect(id.8 >> 6 == 0b10)
        }
    }

    @Test func theLowerCaseTextIsFoundationsTextLowerCased() throws {
        let fixed = try #require(UUID(uuidString: "00FF10AB-9C4D-4F60-B7E2-0C5D9A8F1E23"))
        #expect(fixed.lowercasedString == "00ff10ab-9c4d-4f60-b7e2-0c5d9a8f1e23")
        for _ in 0..<2_000 {
            let id = UUID()
            #expect(id.lowercasedString == id.uuidString.lowercased())
        }
        let text = RandomUUID.string()
        #expect(UUID(uuidString: text)?.lowercasedString == text)
    }

    @Test func idsDoNotRepeatAcrossConcurrentTasks() async {
        let batches = await withTaskGroup(of: [String].self) { group in
            for _ in 0..<4 {
                group.addTask { (0..<25_000).map { _ in RandomUUID.string() } }
            }
            return await group.reduce(into: [[String]]()) { $0.append($1) }
        }
        #expect(Set(batches.joined()).count == 100_000)
    }
}
