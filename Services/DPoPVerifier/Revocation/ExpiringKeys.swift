/// Keys remembered each until a moment (Unix seconds).
///
/// Swift tasks run on the sidecar's event loops, so reclaiming must never pass over every entry at once:
/// with tens of thousands of revoked tokens that would hold up every request on the loop for
/// milliseconds. A min-heap orders the entries by their moment; each insert reclaims at most
/// `insertBudget` passed entries and each `sweep` at most `sweepBudget`, O(log n) apiece. Entries past
/// their moment but not reclaimed yet are harmless: whatever they refuse would be refused anyway.
struct ExpiringKeys {
    private(set) var entries: [String: Int64] = [:]
    /// Binary min-heap by moment. Every entry has one heap item with its moment; a key whose moment was
    /// extended leaves its older item behind until it is popped (it no longer matches and is skipped).
    private var heap: [(until: Int64, key: String)] = []

    /// Passed entries reclaimed per insert at most: more than one, so reclaiming outpaces inserting.
    static let insertBudget = 4
    /// Passed entries reclaimed per `sweep` at most (a fraction of a millisecond of work).
    static let sweepBudget = 1_024

    var count: Int { entries.count }

    /// Remembers `key` until `until` (the later moment when it is known already); true when it was new.
    /// Nothing is kept when `until` has passed.
    mutating func insert(_ key: String, until: Int64, now: Int64) -> Bool {
        reclaim(now: now, budget: Self.insertBudget)
        guard until > now else { return false }
        guard let known = entries[key] else {
            entries[key] = until
            push(until, key)
            return true
        }
        if until > known {
            entries[key] = until
            push(until, key)
        }
        return false
    }

    func contains(_ key: String) -> Bool {
        entries[key] != nil
    }

    /// Drops entries whose moment has passed, the soonest first, `sweepBudget` at most; true when passed entries
    /// remain (the caller sweeps again after letting other work run).
    @discardableResult
    mutating func sweep(now: Int64) -> Bool {
        reclaim(now: now, budget: Self.sweepBudget)
    }

    @discardableResult
    private mutating func reclaim(now: Int64, budget: Int) -> Bool {
        var remaining = budget
        while remaining > 0, let top = heap.first, top.until <= now {
            popMin()
            if entries[top.key] == top.until { entries[top.key] = nil }
            remaining -= 1
        }
        // Storage follows the entries down after a mass expiry.
        if heap.isEmpty, heap.capacity > 1_024 {
            heap = []
            entries = [:]
        }
        return heap.first.map { $0.until <= now } ?? false
    }

    private mutating func push(_ until: Int64, _ key: String) {
        heap.append((until, key))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].until < heap[parent].until else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func popMin() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].until < heap[smallest].until { smallest = left }
            if right < heap.count, heap[right].until < heap[smallest].until { smallest = right }
            guard smallest != parent else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
