/// Keys remembered each until a moment (Unix seconds). Entries past their moment are dropped at most once a
/// minute while inserting, which keeps inserts O(1) amortised, and whenever `sweep` is called; until then
/// they are harmless, as whatever they refuse would be refused anyway.
struct ExpiringKeys {
    private(set) var entries: [String: Int64] = [:]
    private var nextSweep: Int64 = 0

    static let sweepIntervalSeconds: Int64 = 60

    var count: Int { entries.count }

    /// Remembers `key` until `until` (the later moment when it is known already); true when it was new.
    /// Nothing is kept when `until` has passed.
    mutating func insert(_ key: String, until: Int64, now: Int64) -> Bool {
        if now >= nextSweep { sweep(now: now) }
        guard until > now else { return false }
        guard let known = entries[key] else {
            entries[key] = until
            return true
        }
        if until > known { entries[key] = until }
        return false
    }

    func contains(_ key: String) -> Bool {
        entries[key] != nil
    }

    /// Drops the entries whose moment has passed; the storage shrinks with them.
    mutating func sweep(now: Int64) {
        entries = entries.filter { $0.value > now }
        nextSweep = now + Self.sweepIntervalSeconds
    }
}
