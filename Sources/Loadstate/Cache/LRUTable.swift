/// The entries of a memory cache in least-recently-used order: a
/// dictionary from key to slot, and the slots chained into a doubly linked
/// list by index (most recent at the head). Every operation on one key is
/// O(1); freed slots are reused.
///
/// Not thread-safe: `MemoryCache` keeps it under its lock.
struct LRUTable {
    private struct Slot {
        var key: CacheKey
        var entry: CacheEntry
        var prev: Int32
        var next: Int32
    }

    private static let none: Int32 = -1

    private var slots: [Slot] = []
    private var freeSlots: [Int32] = []
    private var index: [CacheKey: Int32] = [:]
    private var head = none
    private var tail = none

    /// Bytes of keys and values held.
    private(set) var bytes = 0
    var count: Int { index.count }

    /// The entry under `key`, moved to the head.
    mutating func touch(_ key: CacheKey) -> CacheEntry? {
        guard let i = index[key] else { return nil }
        moveToHead(i)
        return slots[Int(i)].entry
    }

    /// Stores an entry at the head, replacing any entry under the key.
    mutating func set(_ key: CacheKey, _ entry: CacheEntry) {
        let size = key.bytes.count + entry.value.count
        if let i = index[key] {
            bytes += size - Self.size(of: slots[Int(i)])
            slots[Int(i)].entry = entry
            moveToHead(i)
            return
        }
        let slot = Slot(key: key, entry: entry, prev: Self.none, next: Self.none)
        let i: Int32
        if let reused = freeSlots.popLast() {
            i = reused
            slots[Int(i)] = slot
        } else {
            i = Int32(slots.count)
            slots.append(slot)
        }
        index[key] = i
        bytes += size
        linkAtHead(i)
    }

    /// Drops the entry under `key`; whether there was one.
    @discardableResult
    mutating func remove(_ key: CacheKey) -> Bool {
        guard let i = index[key] else { return false }
        release(i)
        return true
    }

    /// Drops the least recently used entry; false when empty.
    mutating func removeLeastRecent() -> Bool {
        guard tail != Self.none else { return false }
        release(tail)
        return true
    }

    mutating func removeAll() {
        slots = []
        freeSlots = []
        index = [:]
        head = Self.none
        tail = Self.none
        bytes = 0
    }

    /// The keys that begin with `prefix` (a scan of every entry).
    func keys(withPrefix prefix: [UInt8]) -> [CacheKey] {
        index.keys.filter { $0.hasPrefix(prefix) }
    }

    /// Sets the stale flag of the entry under `key`.
    mutating func markStale(_ key: CacheKey) {
        if let i = index[key] { slots[Int(i)].entry.isStale = true }
    }

    /// The keys from most to least recently used (for tests).
    func keysByRecency() -> [[UInt8]] {
        var keys: [[UInt8]] = []
        var i = head
        while i != Self.none {
            keys.append(slots[Int(i)].key.bytes)
            i = slots[Int(i)].next
        }
        return keys
    }

    // MARK: - List

    private static func size(of slot: Slot) -> Int {
        slot.key.bytes.count + slot.entry.value.count
    }

    private mutating func release(_ i: Int32) {
        unlink(i)
        let slot = slots[Int(i)]
        index[slot.key] = nil
        bytes -= Self.size(of: slot)
        slots[Int(i)] = Slot(key: CacheKey([]), entry: CacheEntry(value: [], storedAtMs: 0),
                             prev: Self.none, next: Self.none)
        freeSlots.append(i)
    }

    private mutating func moveToHead(_ i: Int32) {
        guard head != i else { return }
        unlink(i)
        linkAtHead(i)
    }

    private mutating func linkAtHead(_ i: Int32) {
        slots[Int(i)].prev = Self.none
        slots[Int(i)].next = head
        if head != Self.none { slots[Int(head)].prev = i }
        head = i
        if tail == Self.none { tail = i }
    }

    private mutating func unlink(_ i: Int32) {
        let prev = slots[Int(i)].prev
        let next = slots[Int(i)].next
        if prev != Self.none { slots[Int(prev)].next = next } else { head = next }
        if next != Self.none { slots[Int(next)].prev = prev } else { tail = prev }
        slots[Int(i)].prev = Self.none
        slots[Int(i)].next = Self.none
    }
}
