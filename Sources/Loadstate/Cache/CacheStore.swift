/// What cells use a cache through: a map from byte-string keys to entries,
/// bounded, with a time to live. `MemoryCache` and `PersistentCache`
/// conform; both are safe to use from any thread (each operation runs on
/// the calling thread under the cache's lock).
///
/// Lifecycle: created open, inserted in a runtime's table as a handle of
/// kind `.cache`; `close` (or the runtime's close) releases what it holds.
/// A closed memory cache is empty and keeps nothing; a closed persistent
/// cache throws `ResultCode.closed`.
public protocol CacheStore: AnyObject, Sendable {
    /// The memory cache's name, or the persistent cache's file path.
    var name: String { get }

    /// The live entry under `key`, refreshed as most recently used; nil on
    /// a miss. An expired entry is dropped and counts as a miss.
    func get(_ key: [UInt8]) throws(CacheError) -> CacheEntry?

    /// The entries under `keys`, in their order, each looked up like
    /// `get(_:)` (a hit is refreshed as most recently used, an expired
    /// entry is dropped, every key counts as a hit or a miss): `.success`
    /// with the entry or nil (a miss), or `.failure` for that key alone.
    /// At most `cacheBatchMax` keys (4,096): more throws
    /// `ResultCode.tooBig`. A memory cache looks every key up under one
    /// acquisition of its lock, a persistent cache likewise; a Redis cache
    /// sends every `GET` in one pipeline on its connection and waits once
    /// for all the replies (within the command timeout), after its front
    /// tier answered what it holds. Throws for the whole call what `get`
    /// throws for a closed cache or the loop thread.
    func entries(for keys: [[UInt8]]) throws(CacheError) -> [Result<CacheEntry?, CacheError>]

    /// Stores `value` under `key`, stamped with the current time and not
    /// stale, then evicts least recently used entries until the cache is
    /// within its bounds. `ttlMs`: nil for the cache's default, 0 for no
    /// expiry. An entry larger than the byte bound is not kept (and any
    /// older entry under the key is dropped).
    func put(_ key: [UInt8], _ value: [UInt8], ttlMs: UInt64?) throws(CacheError)

    /// Stores like `put(_:_:ttlMs:)`, with `meta` kept beside the value
    /// (see `CacheEntry.meta`), counted towards the byte bound. A store
    /// that keeps no metadata (the default implementation) drops it: the
    /// http loader then reads what it needs from the stored response.
    func put(_ key: [UInt8], _ value: [UInt8], ttlMs: UInt64?, meta: [UInt8]) throws(CacheError)

    /// Drops the entry under `key`; whether there was one.
    @discardableResult
    func remove(_ key: [UInt8]) throws(CacheError) -> Bool

    /// Drops every entry (the counters stay).
    func clear() throws(CacheError)

    /// The cache's counters and its current size.
    func stats() throws(CacheError) -> CacheStats

    /// The keys of the live entries that begin with `prefix` (every key
    /// when it is empty): a memory cache lists them from most to least
    /// recently used, a persistent cache in byte order. Expired entries
    /// are left out (not dropped); nothing counts as a hit or a use.
    func keys(prefix: [UInt8]) throws(CacheError) -> [[UInt8]]

    /// How many live entries begin with `prefix`, as many as `keys(prefix:)`
    /// lists, counting up to `limit` (0: no limit) without copying a key:
    /// `limit` 1 tells whether there is one. Nothing counts as a hit or a use.
    func count(prefix: [UInt8], limit: UInt64) throws(CacheError) -> UInt64

    /// Marks every entry whose key begins with `prefix` stale; how many.
    @discardableResult
    func markStale(prefix: [UInt8]) throws(CacheError) -> Int

    /// Drops every entry whose key begins with `prefix`; how many.
    @discardableResult
    func removeAll(prefix: [UInt8]) throws(CacheError) -> Int

    /// Releases the cache's memory or file. Idempotent.
    func close()
}

/// Keys laid end to end: key i is the `lengths[i]` bytes after the keys
/// before it. A listing copies keys this way under a cache's lock (two
/// growing arrays, not an array per key), so that the lock is held for
/// the copy alone.
@_spi(LoadstateC) public struct FlatKeys {
    public var bytes: [UInt8] = []
    public var lengths: [Int] = []

    public init() {}

    public init(_ keys: [[UInt8]]) {
        for key in keys { append(key) }
    }

    public mutating func append<Key: Collection<UInt8>>(_ key: Key) {
        bytes.append(contentsOf: key)
        lengths.append(key.count)
    }

    /// The keys as arrays of their own.
    public var keys: [[UInt8]] {
        var keys: [[UInt8]] = []
        keys.reserveCapacity(lengths.count)
        var start = 0
        for length in lengths {
            keys.append(Array(bytes[start..<start + length]))
            start += length
        }
        return keys
    }
}

/// The most keys one `CacheStore.entries(for:)` (`lds_cache_get_many`) looks up.
public let cacheBatchMax = 4_096

extension CacheStore {
    /// Counts what `keys(prefix:)` lists: for stores with no faster way.
    public func count(prefix: [UInt8], limit: UInt64) throws(CacheError) -> UInt64 {
        let listed = UInt64(try keys(prefix: prefix).count)
        return limit == 0 ? listed : min(listed, limit)
    }

    /// Looks the keys up one `get` at a time: for stores with no faster way.
    public func entries(for keys: [[UInt8]]) throws(CacheError) -> [Result<CacheEntry?, CacheError>] {
        try checkBatch(keys.count)
        return keys.map { key in
            do throws(CacheError) {
                return .success(try get(key))
            } catch {
                return .failure(error)
            }
        }
    }

    /// Throws `ResultCode.tooBig` for a batch of more than `cacheBatchMax` keys.
    func checkBatch(_ count: Int) throws(CacheError) {
        guard count <= cacheBatchMax else {
            throw CacheError(.tooBig, "\(name): \(count) keys in one batch (at most \(cacheBatchMax))")
        }
    }

    /// Stores with the cache's default time to live.
    public func put(_ key: [UInt8], _ value: [UInt8]) throws(CacheError) {
        try put(key, value, ttlMs: nil)
    }

    /// Stores without the metadata: for stores that keep none.
    public func put(_ key: [UInt8], _ value: [UInt8], ttlMs: UInt64?, meta: [UInt8]) throws(CacheError) {
        try put(key, value, ttlMs: ttlMs)
    }
}
