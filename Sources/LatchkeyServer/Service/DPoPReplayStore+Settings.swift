import Configuration
import LatchkeyPersistence

extension DPoPReplayStore {
    /// Reads `DPOP_REPLAY_STORE`: `memory` (default) or `postgres`.
    public init(reader: ConfigReader) throws {
        self = try SettingsReader(reader).parse("dpop.replay.store", default: .memory, expected: "memory or postgres") {
            DPoPReplayStore(rawValue: $0)
        }
    }
}
