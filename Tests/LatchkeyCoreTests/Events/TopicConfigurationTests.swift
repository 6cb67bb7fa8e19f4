import Foundation
import Testing

@testable import LatchkeyCore

/// The compose topic job and the Kubernetes topics give every Latchkey topic the settings its event type needs
/// (sidecars rebuild their revocations from three of them at every start).
@Suite struct TopicConfigurationTests {
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    func read(_ path: String) throws -> String {
        try String(contentsOf: Self.repository.appendingPathComponent(path), encoding: .utf8)
    }

    /// `create <suffix> --config k=v …` lines of the compose job, by topic suffix.
    func composeConfigs() throws -> [String: [String: String]] {
        var configs: [String: [String: String]] = [:]
        for line in try read("infra/compose/kafka/create-topics.sh").split(separator: "\n")
        where line.hasPrefix("create ") {
            let words = line.split(separator: " ").map(String.init)
            var settings: [String: String] = [:]
            for (index, word) in words.enumerated() where word == "--config" && index + 1 < words.count {
                let pair = words[index + 1].split(separator: "=", maxSplits: 1).map(String.init)
                if pair.count == 2 { settings[pair[0]] = pair[1] }
            }
            configs[words[1]] = settings
        }
        return configs
    }

    /// `spec.config` of each KafkaTopic, by topic name, without `min.insync.replicas` (the overlays' business).
    func kubernetesConfigs() throws -> [String: [String: String]] {
        var configs: [String: [String: String]] = [:]
        for document in try read("infra/k8s/base/kafka-topics.yaml").components(separatedBy: "\n---") {
            var name: String?
            var settings: [String: String] = [:]
            var inConfig = false
            for line in document.split(separator: "\n", omittingEmptySubsequences: false) {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if trimmed.hasPrefix("topicName:") {
                    name = trimmed.dropFirst("topicName:".count).trimmingCharacters(in: .whitespaces)
                }
                if line.hasPrefix("  config:") {
                    inConfig = true
                    continue
                }
                if inConfig {
                    guard line.hasPrefix("    "), let colon = trimmed.firstIndex(of: ":") else {
                        inConfig = false
                        continue
                    }
                    let value = trimmed[trimmed.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                        .trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                    settings[String(trimmed[..<colon])] = value
                }
            }
            settings["min.insync.replicas"] = nil
            if let name { configs[name] = settings }
        }
        return configs
    }

    @Test func deploymentsCreateEveryTopicWithTheConfigsItsEventTypeNeeds() throws {
        let compose = try composeConfigs()
        let kubernetes = try kubernetesConfigs()
        for topic in LatchkeyEventType.allTopics() {
            let type = try #require(LatchkeyEventType(topic: topic))
            let suffix = String(topic.dropFirst(LatchkeyEventType.defaultTopicPrefix.count))
            #expect(compose[suffix] == type.topicConfigs, "compose \(suffix): \(compose[suffix] ?? [:])")
            #expect(kubernetes[topic] == type.topicConfigs, "kubernetes \(topic): \(kubernetes[topic] ?? [:])")
        }
        #expect(LatchkeyEventType.clientRevoked.topicConfigs["cleanup.policy"] == "compact,delete")
        #expect(
            LatchkeyEventType.tokenRevoked.topicConfigs["cleanup.policy"] == "delete",
            "TokenRevoked must never be compacted")
        // A week, above the sidecar's default longest token lifetime (a day) plus skew and issuance slack.
        #expect(
            LatchkeyEventType.revocationRetentionMilliseconds >= (86_400 + 600 + ClientRevoked.issuanceSlackSeconds)
                * 1_000)
    }
}
