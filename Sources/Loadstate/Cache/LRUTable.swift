import CLibUV
#if canImport(Glibc)
import Glibc
#endif

/// The entries of a memory cache in least-recently-used order.
///
/// Each entry is one allocation, an `EntryBlock`: a header, the key's bytes,
/// then the value's. `buckets` is an open-addressing index (linear probing,
/// at most half full, deletion by backward shift) of 8-byte buckets that
/// hold the block's address and 16 bits of the key's hash, so a hit reads
/// one bucket and one block: the header and the key share the block's
/// first cache line, and the value's lines are prefetched while the key is
/// compared. Every entry also has a slot number, stored in its
/// header: `links` chains the slots into a doubly linked list by index
/// (most recent at the head), kept apart so that relinking touches 8 bytes
/// per neighbour, and `blocks` finds an entry by slot for eviction and for
/// walks. Every operation on one key is O(1) and takes the key as raw
/// bytes, so a lookup allocates nothing.
///
/// Not thread-safe: `MemoryCache` keeps it under its lock. A class so that
/// `deinit` frees the blocks.
final class LRUTable {
    private struct Link {
        var prev: Int32
        var next: Int32
    }

    /// An index entry in 8 bytes: the block's address in the low 48 bits
    /// (user-space addresses fit in them) and the high 16 bits of the key's
    /// hash in the others, so that a probe rarely reads a block that does
    /// not match. 0: empty.
    private struct Bucket {
        var bits: UInt

        static let empty = Bucket(bits: 0)
        private static let addressBits: UInt = (1 << 48) - 1

        init(bits: UInt) { self.bits = bits }

        init(digest: Int, block: EntryBlock) {
            bits = UInt(bitPattern: block.header) | Self.tag(digest)
        }

        static func tag(_ digest: Int) -> UInt { UInt(bitPattern: digest) & ~addressBits }

        var isEmpty: Bool { bits == 0 }
        var tag: UInt { bits & ~Self.addressBits }
        var block: EntryBlock { EntryBlock(UnsafeMutablePointer(bitPattern: bits & Self.addressBits)!) }
    }

    private static let none: Int32 = -1

    private var blocks: [EntryBlock?] = []
    private var links: [Link] = []
    private var freeSlots: [Int32] = []
    private var buckets = [Bucket](repeating: .empty, count: 16)
    private var head = none
    private var tail = none

    /// Entries held.
    private(set) var count = 0
    /// Bytes of keys and values held.
    private(set) var bytes = 0

    deinit {
        for case let block? in blocks { block.free() }
    }

    /// The entry under `key`, if any. The block stays owned by the table.
    func find(_ key: UnsafeRawBufferPointer, digest: Int) -> EntryBlock? {
        findBucket(key, digest: digest).map { buckets[$0].block }
    }

    /// Makes the entry the most recently used.
    func touch(_ block: EntryBlock) {
        let slot = block.header.pointee.slot
        guard head != slot else { return }
        unlink(slot)
        linkAtHead(slot)
    }

    /// Takes ownership of `block` and stores it as the most recently used
    /// entry, freeing any entry it replaces under the same key.
    func insert(_ block: EntryBlock, digest: Int) {
        if let b = findBucket(block.key, digest: digest) {
            let old = buckets[b].block
            let slot = old.header.pointee.slot
            bytes += block.size - old.size
            block.header.pointee.slot = slot
            buckets[b] = Bucket(digest: digest, block: block)
            blocks[Int(slot)] = block
            old.free()
            touch(block)
            return
        }
        if (count + 1) * 2 > buckets.count { grow() }
        let slot: Int32
        if let reused = freeSlots.popLast() {
            slot = reused
            blocks[Int(slot)] = block
        } else {
            slot = Int32(blocks.count)
            blocks.append(block)
            links.append(Link(prev: Self.none, next: Self.none))
        }
        block.header.pointee.slot = slot
        insertBucket(digest: digest, block: block)
        count += 1
        bytes += block.size
        linkAtHead(slot)
    }

    /// Drops and frees the entry.
    func remove(_ block: EntryBlock) {
        let slot = block.header.pointee.slot
        if let b = bucket(of: block) { deleteBucket(b) }
        unlink(slot)
        count -= 1
        bytes -= block.size
        blocks[Int(slot)] = nil
        freeSlots.append(slot)
        block.free()
    }

    /// Drops the least recently used entry; false when empty.
    func removeLeastRecent() -> Bool {
        guard tail != Self.none else { return false }
        remove(blocks[Int(tail)]!)
        return true
    }

    func removeAll() {
        for case let block? in blocks { block.free() }
        blocks = []
        links = []
        freeSlots = []
        buckets = [Bucket](repeating: .empty, count: 16)
        head = Self.none
        tail = Self.none
        count = 0
        bytes = 0
    }

    /// The entries whose keys begin with `prefix` (a walk over every entry).
    func entries(withPrefix prefix: [UInt8]) -> [EntryBlock] {
        var found: [EntryBlock] = []
        var i = head
        while i != Self.none {
            let block = blocks[Int(i)]!
            if block.hasKeyPrefix(prefix) { found.append(block) }
            i = links[Int(i)].next
        }
        return found
    }

    /// The keys beginning with `prefix` whose entry has not expired at
    /// `nowMs`, from most to least recently used, laid end to end.
    func keys(prefix: [UInt8], liveAt nowMs: UInt64) -> FlatKeys {
        var keys = FlatKeys()
        var i = head
        while i != Self.none, let block = blocks[Int(i)] {
            if block.isListed(prefix: prefix, at: nowMs) { keys.append(block.key) }
            i = links[Int(i)].next
        }
        return keys
    }

    /// How many entries beginning with `prefix` have not expired at `nowMs`,
    /// counting up to `limit` (0: no limit). Walks the slots in order and
    /// copies nothing.
    func countLive(prefix: [UInt8], liveAt nowMs: UInt64, limit: UInt64) -> UInt64 {
        var count: UInt64 = 0
        for case let block? in blocks {
            guard block.isListed(prefix: prefix, at: nowMs) else { continue }
            count += 1
            if count == limit { break }
        }
        return count
    }

    // MARK: - Index

    private var mask: Int { buckets.count - 1 }

    private func findBucket(_ key: UnsafeRawBufferPointer, digest: Int) -> Int? {
        let tag = Bucket.tag(digest)
        var b = digest & mask
        while true {
            let bucket = buckets[b]
            if bucket.isEmpty { return nil }
            if bucket.tag == tag {
                let block = bucket.block
                block.prefetchValue()
                if block.keyEquals(key) { return b }
            }
            b = (b + 1) & mask
        }
    }

    /// The bucket that holds `block` (compared by identity, not by key).
    private func bucket(of block: EntryBlock) -> Int? {
        var b = block.digest & mask
        while !buckets[b].isEmpty {
            if buckets[b].block == block { return b }
            b = (b + 1) & mask
        }
        return nil
    }

    private func insertBucket(digest: Int, block: EntryBlock) {
        var b = digest & mask
        while !buckets[b].isEmpty { b = (b + 1) & mask }
        buckets[b] = Bucket(digest: digest, block: block)
    }

    /// Empties bucket `b` and moves later buckets of its run back, so that
    /// every key stays reachable from its home bucket without tombstones.
    private func deleteBucket(_ b: Int) {
        var hole = b
        var next = (b + 1) & mask
        while !buckets[next].isEmpty {
            let home = buckets[next].block.digest & mask
            // The entry may fill the hole if its home is not in (hole, next].
            if (next - home) & mask >= (next - hole) & mask {
                buckets[hole] = buckets[next]
                hole = next
            }
            next = (next + 1) & mask
        }
        buckets[hole] = .empty
    }

    private func grow() {
        let old = buckets
        buckets = [Bucket](repeating: .empty, count: old.count * 2)
        for bucket in old where !bucket.isEmpty {
            let block = bucket.block
            insertBucket(digest: block.digest, block: block)
        }
    }

    // MARK: - List

    private func linkAtHead(_ i: Int32) {
        links[Int(i)] = Link(prev: Self.none, next: head)
        if head != Self.none { links[Int(head)].prev = i }
        head = i
        if tail == Self.none { tail = i }
    }

    private func unlink(_ i: Int32) {
        let link = links[Int(i)]
        if link.prev != Self.none { links[Int(link.prev)].next = link.next } else { head = link.next }
        if link.next != Self.none { links[Int(link.next)].prev = link.prev } else { tail = link.prev }
        links[Int(i)] = Link(prev: Self.none, next: Self.none)
    }
}

/// One memory-cache entry in a single `malloc`'d allocation: an
/// `EntryHeader`, then the key's bytes, then the value's. Owned by the
/// `LRUTable` that holds it (or by the caller until it is inserted).
struct EntryBlock: Equatable {
    /// 32 bytes, so that with a short key the first cache line holds the
    /// header, the key and the start of the value.
    struct EntryHeader {
        var storedAtMs: UInt64
        var expiresAtMs: UInt64
        var valueCount: UInt32
        /// The metadata's length (`CacheEntry.meta`), stored after the value.
        var metaCount: UInt32
        /// The key's length; the top bit marks the entry stale.
        var keyBits: UInt32
        /// The entry's slot in its table's recency list.
        var slot: Int32

        static let staleBit: UInt32 = 1 << 31

        var keyCount: Int { Int(keyBits & ~Self.staleBit) }

        var isStale: Bool {
            get { keyBits & Self.staleBit != 0 }
            set { keyBits = newValue ? keyBits | Self.staleBit : keyBits & ~Self.staleBit }
        }
    }

    private static let headerSize = MemoryLayout<EntryHeader>.stride

    let header: UnsafeMutablePointer<EntryHeader>

    init(_ header: UnsafeMutablePointer<EntryHeader>) {
        self.header = header
    }

    /// Whether a key, a value and metadata of these lengths fit a block's
    /// header (a key under 2 GiB, a value and metadata under 4 GiB each).
    static func fits(key: Int, value: Int, meta: Int) -> Bool {
        key < Int(EntryHeader.staleBit) && value <= Int(UInt32.max) && meta <= Int(UInt32.max)
    }

    /// Copies the key, value and metadata into a new block; their lengths
    /// must pass `fits`.
    init(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, meta: UnsafeRawBufferPointer,
         storedAtMs: UInt64, expiresAtMs: UInt64) {
        precondition(Self.fits(key: key.count, value: value.count, meta: meta.count),
                     "loadstate: cache entry too large for a block")
        let raw = malloc(Self.headerSize + key.count + value.count + meta.count)
        guard let raw else { fatalError("loadstate: out of memory for a cache entry") }
        // The table keeps a hash tag in the address's high 16 bits.
        precondition(UInt(bitPattern: raw) >> 48 == 0, "loadstate: cache entry above 2^48")
        header = raw.bindMemory(to: EntryHeader.self, capacity: 1)
        header.initialize(to: EntryHeader(storedAtMs: storedAtMs, expiresAtMs: expiresAtMs,
                                          valueCount: UInt32(value.count), metaCount: UInt32(meta.count),
                                          keyBits: UInt32(key.count), slot: -1))
        let bytes = raw + Self.headerSize
        if let base = key.baseAddress, key.count > 0 { memcpy(bytes, base, key.count) }
        if let base = value.baseAddress, value.count > 0 { memcpy(bytes + key.count, base, value.count) }
        if let base = meta.baseAddress, meta.count > 0 {
            memcpy(bytes + key.count + value.count, base, meta.count)
        }
    }

    func free() {
        Glibc.free(UnsafeMutableRawPointer(header))
    }

    private var bytes: UnsafeMutableRawPointer { UnsafeMutableRawPointer(header) + Self.headerSize }

    var key: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: bytes, count: header.pointee.keyCount)
    }

    var value: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: bytes + header.pointee.keyCount, count: Int(header.pointee.valueCount))
    }

    var meta: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: bytes + header.pointee.keyCount + Int(header.pointee.valueCount),
                               count: Int(header.pointee.metaCount))
    }

    /// Bytes of key, value and metadata.
    var size: Int { header.pointee.keyCount + Int(header.pointee.valueCount) + Int(header.pointee.metaCount) }

    /// The key's hash (computed again: the header does not keep it).
    var digest: Int { CacheKey.digest(of: key) }

    /// Asks for the two cache lines after the block's first (where a
    /// short value lies), so that they load while the header and key are
    /// read, without waiting for the header to know the sizes. A hint: the
    /// lines may lie past the block.
    @inline(__always)
    func prefetchValue() {
        let base = UnsafeRawPointer(header)
        lds_prefetch_line(base + 64)
        lds_prefetch_line(base + 128)
    }

    func keyEquals(_ other: UnsafeRawBufferPointer) -> Bool {
        let n = header.pointee.keyCount
        guard n == other.count else { return false }
        guard n > 0, let base = other.baseAddress else { return true }
        return memcmp(bytes, base, n) == 0
    }

    /// Whether a listing of `prefix` at `nowMs` shows the entry: its key
    /// begins with `prefix` and its time to live has not passed.
    func isListed(prefix: [UInt8], at nowMs: UInt64) -> Bool {
        let expires = header.pointee.expiresAtMs
        return (expires == 0 || nowMs < expires) && hasKeyPrefix(prefix)
    }

    func hasKeyPrefix(_ prefix: [UInt8]) -> Bool {
        guard header.pointee.keyCount >= prefix.count else { return false }
        return prefix.withUnsafeBytes { p in
            p.isEmpty || memcmp(bytes, p.baseAddress!, p.count) == 0
        }
    }
}
