/// What a cache holds under a key: a value and when it was stored.
///
/// Whether an entry is fresh enough to show is decided by its user from
/// `storedAtMs`; the cache itself only drops entries whose time to live
/// has passed (`expiresAtMs`).
public struct CacheEntry: Sendable, Equatable {
    /// The stored bytes.
    public var value: [UInt8]
    /// Wall-clock time (ms since the Unix epoch) of the put that stored it.
    public var storedAtMs: UInt64
    /// Wall-clock time at which the entry expires; 0: never.
    public var expiresAtMs: UInt64
    /// Set by `markStale(prefix:)`; a later put of the key clears it.
    public var isStale: Bool
    /// What the loader that produced the value keeps beside it (the http
    /// loader: its validators and freshness, an `HTTPCacheRecord`); empty
    /// for values put by hosts. Replaced by every put of the key.
    public var meta: [UInt8]

    /// An entry holding `value`, stored at `storedAtMs` (wall-clock ms), expiring at
    /// `expiresAtMs` (0: never), with `meta` beside it.
    public init(value: [UInt8], storedAtMs: UInt64, expiresAtMs: UInt64 = 0, isStale: Bool = false,
                meta: [UInt8] = []) {
        self.value = value
        self.storedAtMs = storedAtMs
        self.expiresAtMs = expiresAtMs
        self.isStale = isStale
        self.meta = meta
    }

    /// Whether the entry's time to live has passed at `nowMs`.
    public func isExpired(at nowMs: UInt64) -> Bool {
        expiresAtMs != 0 && nowMs >= expiresAtMs
    }

    /// The expiry time of an entry stored at `nowMs` with a time to live
    /// of `ttlMs` (0: never expires).
    static func expiry(storedAt nowMs: UInt64, ttlMs: UInt64) -> UInt64 {
        guard ttlMs != 0 else { return 0 }
        let (sum, overflow) = nowMs.addingReportingOverflow(ttlMs)
        return overflow ? .max : sum
    }
}

/// A cache entry seen in place, without a copy: valid only inside the
/// closure that receives it (`MemoryCache.read`, `PersistentCache.read`).
@usableFromInline package struct CacheEntryView {
    /// The value's bytes, owned by the cache.
    @usableFromInline package let value: UnsafeRawBufferPointer
    @usableFromInline package let storedAtMs: UInt64
    @usableFromInline package let expiresAtMs: UInt64
    @usableFromInline package let isStale: Bool
    /// The entry's metadata (see `CacheEntry.meta`), owned by the cache.
    @usableFromInline package let meta: UnsafeRawBufferPointer

    @usableFromInline package init(value: UnsafeRawBufferPointer, storedAtMs: UInt64, expiresAtMs: UInt64,
                                   isStale: Bool, meta: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0)) {
        self.value = value
        self.storedAtMs = storedAtMs
        self.expiresAtMs = expiresAtMs
        self.isStale = isStale
        self.meta = meta
    }

    /// Whether the entry's time to live has passed at `nowMs`.
    func isExpired(at nowMs: UInt64) -> Bool {
        expiresAtMs != 0 && nowMs >= expiresAtMs
    }

    /// An owned copy.
    @usableFromInline package var entry: CacheEntry {
        CacheEntry(value: Array(value), storedAtMs: storedAtMs, expiresAtMs: expiresAtMs, isStale: isStale,
                   meta: Array(meta))
    }
}
