/// A named in-memory cache shared by any number of cells: least recently
/// used entries are evicted to stay within a count and a byte bound, and
/// entries expire after a time to live.
///
/// Lifecycle: `init`, then used from any thread (each operation takes the
/// cache's lock, O(1) for one key); `close` (or the runtime's close) drops
/// every entry, and the closed cache keeps nothing that is put into it.
public final class MemoryCache: Handle, CacheStore, @unchecked Sendable {
    /// The bounds of a memory cache.
    public struct Options: Sendable {
        /// Most entries held (at least 1).
        public var maxEntries = 10_000
        /// Most bytes of keys and values held.
        public var maxBytes = 64 << 20
        /// Default time to live of an entry, in ms; 0: entries do not expire.
        public var ttlMs: UInt64 = 0
        /// How long an entry that no cell observes is kept, in ms; 0: no
        /// such limit. An entry is observed while a live cell's last load
        /// used this cache and its key (the cell was not reset since); the
        /// grace starts when the last such cell stops, or at the put for an
        /// entry no cell observes. Separate from freshness and from `ttlMs`.
        /// A dropped entry counts in `CacheStats.expirations`.
        public var unobservedMs: UInt64 = 0

        /// Bounds; the defaults hold up to 10,000 entries and 64 MiB that never expire.
        public init(maxEntries: Int = 10_000, maxBytes: Int = 64 << 20, ttlMs: UInt64 = 0,
                    unobservedMs: UInt64 = 0) {
            self.maxEntries = maxEntries
            self.maxBytes = maxBytes
            self.ttlMs = ttlMs
            self.unobservedMs = unobservedMs
        }
    }

    private struct State {
        var table = LRUTable()
        var stats = CacheStats()
        var isClosed = false
        /// Used only with `Options.unobservedMs` > 0.
        var unobserved = UnobservedEntries()

        /// Drops the entry under `key`; whether there was one.
        @discardableResult
        func remove(_ key: UnsafeRawBufferPointer, digest: Int) -> Bool {
            guard let block = table.find(key, digest: digest) else { return false }
            table.remove(block)
            return true
        }
    }

    public let name: String
    /// The bounds the cache was made with.
    public let options: Options
    private let now: @Sendable () -> UInt64
    private let state = Locked(State())

    /// `now` gives wall-clock milliseconds; tests inject their own clock.
    @usableFromInline package init(id: UInt64, name: String, options: Options = Options(),
                now: @escaping @Sendable () -> UInt64 = Clock.wallMs) {
        self.name = name
        var options = options
        options.maxEntries = max(options.maxEntries, 1)
        self.options = options
        self.now = now
        super.init(id: id)
    }

    public func get(_ key: [UInt8]) -> CacheEntry? {
        key.withUnsafeBytes { read($0) { $0.entry } }
    }

    /// Looks up a key given as raw bytes and passes the live entry, in
    /// place, to `body`, under the cache's lock (keep it short); nil on a
    /// miss. Like `get`, without allocating.
    @usableFromInline package func read<R>(_ key: UnsafeRawBufferPointer, _ body: (CacheEntryView) -> R) -> R? {
        let digest = CacheKey.digest(of: key)
        let graceMs = options.unobservedMs
        return state.withLock { s in
            if graceMs > 0 { Self.sweep(&s, now: now(), graceMs: graceMs) }
            return Self.lookup(&s, key, digest: digest, now: now, graceMs: graceMs).map(body)
        }
    }

    /// Looks up `count` keys given as raw bytes under one acquisition of
    /// the cache's lock, each like `read`: `found(i, entry)` with the live
    /// entry of key `i` in place (keep it short), or nil on a miss. A key
    /// for which `key(i)` is nil is skipped (neither a hit nor a miss).
    @usableFromInline package func read(count: Int, key: (Int) -> UnsafeRawBufferPointer?,
                                        _ found: (Int, CacheEntryView?) -> Void) {
        let nowMs = now()
        let graceMs = options.unobservedMs
        state.withLock { s in
            if graceMs > 0 { Self.sweep(&s, now: nowMs, graceMs: graceMs) }
            for i in 0..<max(count, 0) {
                guard let k = key(i) else { continue }
                found(i, Self.lookup(&s, k, digest: CacheKey.digest(of: k), now: { nowMs }, graceMs: graceMs))
            }
        }
    }

    /// The live entry under `key`, touched, in place; nil on a miss (an
    /// expired entry, or one past its unobserved grace, is dropped). Counts
    /// the hit or miss. Under the lock.
    private static func lookup(_ s: inout State, _ key: UnsafeRawBufferPointer, digest: Int,
                               now: () -> UInt64, graceMs: UInt64) -> CacheEntryView? {
        guard let block = s.table.find(key, digest: digest) else {
            s.stats.misses += 1
            return nil
        }
        let header = block.header.pointee
        if header.expiresAtMs != 0 && now() >= header.expiresAtMs {
            s.table.remove(block)
            s.stats.expirations += 1
            s.stats.misses += 1
            return nil
        }
        if graceMs > 0, s.unobserved.isPastGrace([UInt8](key), storedAt: header.storedAtMs, now: now(), graceMs: graceMs) {
            s.table.remove(block)
            s.stats.expirations += 1
            s.stats.misses += 1
            return nil
        }
        s.table.touch(block)
        s.stats.hits += 1
        return CacheEntryView(value: block.value, storedAtMs: header.storedAtMs,
                              expiresAtMs: header.expiresAtMs, isStale: header.isStale, meta: block.meta)
    }

    /// The entries under `keys`, under one acquisition of the lock (see
    /// `CacheStore.entries(for:)`); never a failure per key.
    public func entries(for keys: [[UInt8]]) throws(CacheError) -> [Result<CacheEntry?, CacheError>] {
        try checkBatch(keys.count)
        var entries = [Result<CacheEntry?, CacheError>](repeating: .success(nil), count: keys.count)
        // The keys side by side, so that one buffer is borrowed for all.
        let flat = keys.flatMap { $0 }
        var starts = [0]
        for key in keys { starts.append(starts[starts.count - 1] + key.count) }
        flat.withUnsafeBytes { all in
            read(count: keys.count, key: { UnsafeRawBufferPointer(rebasing: all[starts[$0]..<starts[$0 + 1]]) }) {
                entries[$0] = .success($1?.entry)
            }
        }
        return entries
    }

    /// Stores with the cache's default time to live.
    public func put(_ key: [UInt8], _ value: [UInt8]) {
        put(key, value, ttlMs: nil)
    }

    public func put(_ key: [UInt8], _ value: [UInt8], ttlMs: UInt64?) {
        put(key, value, ttlMs: ttlMs, meta: [])
    }

    /// Stores with `meta` beside the value (see `CacheStore`).
    public func put(_ key: [UInt8], _ value: [UInt8], ttlMs: UInt64?, meta: [UInt8]) {
        key.withUnsafeBytes { k in
            value.withUnsafeBytes { v in meta.withUnsafeBytes { m in put(k, v, ttlMs: ttlMs, meta: m) } }
        }
    }

    /// Stores a key, a value and metadata given as raw bytes, copied once,
    /// into the entry's block (before the lock is taken).
    package func put(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, ttlMs: UInt64?,
                     meta: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0)) {
        let nowMs = now()
        let expires = CacheEntry.expiry(storedAt: nowMs, ttlMs: ttlMs ?? options.ttlMs)
        let digest = CacheKey.digest(of: key)
        let (size, overflow) = key.count.addingReportingOverflow(value.count + meta.count)
        if overflow || size > options.maxBytes || !EntryBlock.fits(key: key.count, value: value.count, meta: meta.count) {
            state.withLock { s in
                guard !s.isClosed else { return }
                _ = s.remove(key, digest: digest)
                s.stats.evictions += 1
            }
            return
        }
        let block = EntryBlock(key: key, value: value, meta: meta, storedAtMs: nowMs, expiresAtMs: expires)
        state.withLock { s in
            guard !s.isClosed else {
                block.free()
                return
            }
            s.table.insert(block, digest: digest)
            if options.unobservedMs > 0 {
                s.unobserved.stored([UInt8](key), now: nowMs, graceMs: options.unobservedMs)
                Self.sweep(&s, now: nowMs, graceMs: options.unobservedMs)
            }
            while s.table.count > options.maxEntries || s.table.bytes > options.maxBytes {
                guard s.table.removeLeastRecent() else { break }
                s.stats.evictions += 1
            }
        }
    }

    /// The entry under `key` as it is (an expired one included), without
    /// counting a hit or a miss or touching its recency: what a write's
    /// optimistic value replaces (see `OptimisticLedger`).
    package func peekEntry(_ key: [UInt8]) -> CacheEntry? {
        let digest = key.withUnsafeBytes { CacheKey.digest(of: $0) }
        return state.withLock { s in
            key.withUnsafeBytes { k in
                s.table.find(k, digest: digest).map { block in
                    let header = block.header.pointee
                    return CacheEntry(value: Array(block.value), storedAtMs: header.storedAtMs,
                                      expiresAtMs: header.expiresAtMs, isStale: header.isStale, meta: Array(block.meta))
                }
            }
        }
    }

    /// Makes the entry under `key` exactly `entry` (its times, stale mark
    /// and metadata; nil: no entry), if the entry there now is `expected`
    /// (nil: none) or `checks` is false. Returns whether it did: an entry
    /// another put stored since is newer data, left alone. An entry past
    /// the cache's bounds is not kept.
    package func replaceEntry(_ key: [UInt8], with entry: CacheEntry?, ifCurrent expected: CacheEntry?,
                              checks: Bool) -> Bool {
        let digest = key.withUnsafeBytes { CacheKey.digest(of: $0) }
        let block: EntryBlock? = entry.flatMap { entry in
            let size = key.count.addingReportingOverflow(entry.value.count).partialValue
            guard size <= options.maxBytes,
                  EntryBlock.fits(key: key.count, value: entry.value.count, meta: entry.meta.count) else { return nil }
            return key.withUnsafeBytes { k in
                entry.value.withUnsafeBytes { v in
                    entry.meta.withUnsafeBytes { m in
                        EntryBlock(key: k, value: v, meta: m, storedAtMs: entry.storedAtMs,
                                   expiresAtMs: entry.expiresAtMs)
                    }
                }
            }
        }
        block?.header.pointee.isStale = entry?.isStale ?? false
        return state.withLock { s in
            key.withUnsafeBytes { k in
                let current = s.table.find(k, digest: digest)
                if checks {
                    let header = current?.header.pointee
                    let same: Bool
                    switch (current, expected) {
                    case (nil, nil): same = true
                    case (let c?, let e?):
                        same = header?.storedAtMs == e.storedAtMs && header?.expiresAtMs == e.expiresAtMs
                            && header?.isStale == e.isStale && c.value.elementsEqual(e.value)
                    default: same = false
                    }
                    guard same, !s.isClosed else {
                        block?.free()
                        return false
                    }
                }
                guard !s.isClosed else {
                    block?.free()
                    return false
                }
                if let block {
                    s.table.insert(block, digest: digest)
                    while s.table.count > options.maxEntries || s.table.bytes > options.maxBytes {
                        guard s.table.removeLeastRecent() else { break }
                        s.stats.evictions += 1
                    }
                } else if let current {
                    s.table.remove(current)
                }
                return true
            }
        }
    }

    @discardableResult
    public func remove(_ key: [UInt8]) -> Bool {
        let digest = key.withUnsafeBytes { CacheKey.digest(of: $0) }
        return state.withLock { s in key.withUnsafeBytes { s.remove($0, digest: digest) } }
    }

    public func clear() {
        state.withLock { $0.table.removeAll() }
    }

    public func stats() -> CacheStats {
        let graceMs = options.unobservedMs
        let nowMs = graceMs > 0 ? now() : 0
        return state.withLock { s in
            if graceMs > 0 { Self.sweep(&s, now: nowMs, graceMs: graceMs) }
            var stats = s.stats
            stats.entries = UInt64(s.table.count)
            stats.bytes = UInt64(s.table.bytes)
            return stats
        }
    }

    @discardableResult
    public func markStale(prefix: [UInt8]) -> Int {
        state.withLock { s in
            let blocks = s.table.entries(withPrefix: prefix)
            for block in blocks { block.header.pointee.isStale = true }
            return blocks.count
        }
    }

    @discardableResult
    public func removeAll(prefix: [UInt8]) -> Int {
        state.withLock { s in
            let blocks = s.table.entries(withPrefix: prefix)
            for block in blocks { s.table.remove(block) }
            return blocks.count
        }
    }

    override func shutdown(runtime: Runtime) {
        close()
    }

    public func close() {
        state.withLock { s in
            s.isClosed = true
            s.table.removeAll()
            s.unobserved.removeAll()
        }
    }

    /// The keys of the live entries that begin with `prefix`, from the most
    /// to the least recently used (see `CacheStore.keys(prefix:)`).
    public func keys(prefix: [UInt8]) -> [[UInt8]] {
        flatKeys(prefix: prefix).keys
    }

    /// The keys of `keys(prefix:)` laid end to end: what is copied under
    /// the cache's lock.
    @_spi(LoadstateC) public func flatKeys(prefix: [UInt8]) -> FlatKeys {
        let nowMs = now()
        let graceMs = options.unobservedMs
        return state.withLock { s in
            if graceMs > 0 { Self.sweep(&s, now: nowMs, graceMs: graceMs) }
            return s.table.keys(prefix: prefix, liveAt: nowMs)
        }
    }

    /// How many live entries begin with `prefix`, up to `limit` (see
    /// `CacheStore.count(prefix:limit:)`).
    public func count(prefix: [UInt8], limit: UInt64) -> UInt64 {
        let nowMs = now()
        let graceMs = options.unobservedMs
        return state.withLock { s in
            if graceMs > 0 { Self.sweep(&s, now: nowMs, graceMs: graceMs) }
            return s.table.countLive(prefix: prefix, liveAt: nowMs, limit: limit)
        }
    }

    // MARK: - Unobserved entries (`Options.unobservedMs`)

    /// Whether the cache drops the entries no cell observes after a grace.
    var dropsUnobserved: Bool { options.unobservedMs > 0 }

    /// A cell observes the entry under `key` (see `Options.unobservedMs`)
    /// until it calls `release(_:)` for it. Any thread.
    func observe(_ key: [UInt8]) {
        guard dropsUnobserved else { return }
        let nowMs = now()
        state.withLock { s in
            guard !s.isClosed else { return }
            Self.sweep(&s, now: nowMs, graceMs: options.unobservedMs)
            s.unobserved.observe(key)
        }
    }

    /// A cell stopped observing the entry under `key`: its grace starts
    /// now, unless another cell still observes it. Any thread.
    func release(_ key: [UInt8]) {
        guard dropsUnobserved else { return }
        let nowMs = now()
        state.withLock { s in
            guard !s.isClosed else { return }
            s.unobserved.release(key, now: nowMs, graceMs: options.unobservedMs)
            Self.sweep(&s, now: nowMs, graceMs: options.unobservedMs)
        }
    }

    /// Drops the entries whose grace has passed at `now`, each counted as an
    /// expiration. Under the lock; O(1) when none is due.
    private static func sweep(_ s: inout State, now: UInt64, graceMs: UInt64) {
        let table = s.table
        let expired = s.unobserved.popDue(now: now, graceMs: graceMs) { key in
            key.withUnsafeBytes { k in table.find(k, digest: CacheKey.digest(of: k))?.header.pointee.storedAtMs }
        }
        for key in expired {
            key.withUnsafeBytes { k in
                if let block = table.find(k, digest: CacheKey.digest(of: k)) {
                    table.remove(block)
                    s.stats.expirations += 1
                }
            }
        }
    }
}

