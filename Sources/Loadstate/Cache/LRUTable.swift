/// The entries of a memory cache in least-recently-used order.
///
/// Entries live in `slots`; freed slots are reused. `links` chains them
/// into a doubly linked list by index (most recent at the head), kept apart
/// so that relinking touches 8 bytes per neighbour. `buckets` is an
/// open-addressing index over the slots (linear probing, at most half
/// full, deletion by backward shift) holding 32 bits of each key's hash
/// next to its slot, so a lookup reads one bucket and the matching slot.
/// Every operation on one key is O(1) and takes the key as raw bytes, so a
/// lookup allocates nothing.
///
/// Not thread-safe: `MemoryCache` keeps it under its lock.
struct LRUTable {
    private struct Slot {
        var key: CacheKey
        var entry: CacheEntry
    }

    private struct Link {
        var prev: Int32
        var next: Int32
    }

    private struct Bucket {
        /// The high 32 bits of the key's hash; the low bits chose the bucket.
        var tag: UInt32
        /// The slot, or `none` when the bucket is empty.
        var slot: Int32
    }

    private static let none: Int32 = -1
    private static let empty = Bucket(tag: 0, slot: none)
    private static let freed = Slot(key: CacheKey([]), entry: CacheEntry(value: [], storedAtMs: 0))

    private var slots: [Slot] = []
    private var links: [Link] = []
    private var freeSlots: [Int32] = []
    private var buckets = [Bucket](repeating: empty, count: 16)
    private var head = none
    private var tail = none

    /// Entries held.
    private(set) var count = 0
    /// Bytes of keys and values held.
    private(set) var bytes = 0

    /// The slot of the entry under `key`, if any.
    func find(_ key: UnsafeRawBufferPointer, digest: Int) -> Int32? {
        findBucket(key, digest: digest).map { buckets[$0].slot }
    }

    func entry(_ slot: Int32) -> CacheEntry {
        slots[Int(slot)].entry
    }

    /// Makes the entry the most recently used.
    mutating func touch(_ slot: Int32) {
        guard head != slot else { return }
        unlink(slot)
        linkAtHead(slot)
    }

    /// Stores an entry as the most recently used, replacing any entry under the key.
    mutating func set(_ key: CacheKey, _ entry: CacheEntry) {
        let size = key.bytes.count + entry.value.count
        if let slot = key.bytes.withUnsafeBytes({ find($0, digest: key.digest) }) {
            bytes += size - Self.size(of: slots[Int(slot)])
            slots[Int(slot)].entry = entry
            touch(slot)
            return
        }
        if (count + 1) * 2 > buckets.count { grow() }
        let record = Slot(key: key, entry: entry)
        let slot: Int32
        if let reused = freeSlots.popLast() {
            slot = reused
            slots[Int(slot)] = record
        } else {
            slot = Int32(slots.count)
            slots.append(record)
            links.append(Link(prev: Self.none, next: Self.none))
        }
        insertBucket(digest: key.digest, slot: slot)
        count += 1
        bytes += size
        linkAtHead(slot)
    }

    /// Drops the entry in `slot`.
    mutating func remove(_ slot: Int32) {
        let key = slots[Int(slot)].key
        if let b = key.bytes.withUnsafeBytes({ findBucket($0, digest: key.digest) }) {
            deleteBucket(b)
        }
        unlink(slot)
        count -= 1
        bytes -= Self.size(of: slots[Int(slot)])
        slots[Int(slot)] = Self.freed
        freeSlots.append(slot)
    }

    /// Drops the least recently used entry; false when empty.
    mutating func removeLeastRecent() -> Bool {
        guard tail != Self.none else { return false }
        remove(tail)
        return true
    }

    mutating func removeAll() {
        slots = []
        links = []
        freeSlots = []
        buckets = [Bucket](repeating: Self.empty, count: 16)
        head = Self.none
        tail = Self.none
        count = 0
        bytes = 0
    }

    /// The slots of the keys that begin with `prefix` (a walk over every entry).
    func slots(withPrefix prefix: [UInt8]) -> [Int32] {
        var found: [Int32] = []
        var i = head
        while i != Self.none {
            if slots[Int(i)].key.hasPrefix(prefix) { found.append(i) }
            i = links[Int(i)].next
        }
        return found
    }

    mutating func markStale(_ slot: Int32) {
        slots[Int(slot)].entry.isStale = true
    }

    /// The keys from most to least recently used (for tests).
    func keysByRecency() -> [[UInt8]] {
        var keys: [[UInt8]] = []
        var i = head
        while i != Self.none {
            keys.append(slots[Int(i)].key.bytes)
            i = links[Int(i)].next
        }
        return keys
    }

    // MARK: - Index

    private static func size(of slot: Slot) -> Int {
        slot.key.bytes.count + slot.entry.value.count
    }

    private var mask: Int { buckets.count - 1 }

    private static func tag(_ digest: Int) -> UInt32 {
        UInt32(truncatingIfNeeded: UInt64(bitPattern: Int64(digest)) >> 32)
    }

    private func findBucket(_ key: UnsafeRawBufferPointer, digest: Int) -> Int? {
        let tag = Self.tag(digest)
        var b = digest & mask
        while true {
            let bucket = buckets[b]
            if bucket.slot == Self.none { return nil }
            if bucket.tag == tag && slots[Int(bucket.slot)].key.matches(key) { return b }
            b = (b + 1) & mask
        }
    }

    private mutating func insertBucket(digest: Int, slot: Int32) {
        var b = digest & mask
        while buckets[b].slot != Self.none { b = (b + 1) & mask }
        buckets[b] = Bucket(tag: Self.tag(digest), slot: slot)
    }

    /// Empties bucket `b` and moves later buckets of its run back, so that
    /// every key stays reachable from its home bucket without tombstones.
    private mutating func deleteBucket(_ b: Int) {
        var hole = b
        var next = (b + 1) & mask
        while buckets[next].slot != Self.none {
            let home = slots[Int(buckets[next].slot)].key.digest & mask
            // The entry may fill the hole if its home is not in (hole, next].
            if (next - home) & mask >= (next - hole) & mask {
                buckets[hole] = buckets[next]
                hole = next
            }
            next = (next + 1) & mask
        }
        buckets[hole] = Self.empty
    }

    private mutating func grow() {
        let old = buckets
        buckets = [Bucket](repeating: Self.empty, count: old.count * 2)
        for bucket in old where bucket.slot != Self.none {
            insertBucket(digest: slots[Int(bucket.slot)].key.digest, slot: bucket.slot)
        }
    }

    // MARK: - List

    private mutating func linkAtHead(_ i: Int32) {
        links[Int(i)] = Link(prev: Self.none, next: head)
        if head != Self.none { links[Int(head)].prev = i }
        head = i
        if tail == Self.none { tail = i }
    }

    private mutating func unlink(_ i: Int32) {
        let link = links[Int(i)]
        if link.prev != Self.none { links[Int(link.prev)].next = link.next } else { head = link.next }
        if link.next != Self.none { links[Int(link.next)].prev = link.prev } else { tail = link.prev }
        links[Int(i)] = Link(prev: Self.none, next: Self.none)
    }
}
