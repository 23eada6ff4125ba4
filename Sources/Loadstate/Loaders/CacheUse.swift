/// How a load uses a cache.
public enum CachePolicy: UInt32, Sendable {
    /// Always load; store the result.
    case loadOnly = 0
    /// A fresh cached value is shown and nothing is loaded; otherwise load
    /// and store the result.
    case cacheFirst = 1
    /// A cached value (fresh or stale) is shown at once, flagged from-cache
    /// (and stale), then a silent load revalidates it; a failed
    /// revalidation keeps the cached value and reports the error with it.
    case cacheThenLoad = 2
    /// Only the cache: its value, or an error `ResultCode.notFound`.
    case cacheOnly = 3
}

/// A load's cache: where, under which key, with which policy and ages, and
/// how values become bytes. A class, so that the specs and jobs of loads
/// without a cache stay small and those with one share it.
@usableFromInline package final class CacheUse<Value> {
    @usableFromInline package let store: any CacheStore
    @usableFromInline package let key: [UInt8]
    @usableFromInline package let policy: CachePolicy
    /// Entries younger than this are fresh; older ones are stale.
    @usableFromInline package let freshMs: UInt64
    /// Entries older than this are not used at all; 0 for no limit.
    @usableFromInline package let maxAgeMs: UInt64
    @usableFromInline package let encode: (Value) -> [UInt8]
    @usableFromInline package let decode: ([UInt8]) -> Value?

    @usableFromInline package init(store: any CacheStore, key: [UInt8], policy: CachePolicy, freshMs: UInt64 = 0,
                maxAgeMs: UInt64 = 0, encode: @escaping (Value) -> [UInt8],
                decode: @escaping ([UInt8]) -> Value?) {
        self.store = store
        self.key = key
        self.policy = policy
        self.freshMs = freshMs
        self.maxAgeMs = maxAgeMs
        self.encode = encode
        self.decode = decode
    }

    /// The same use with another policy.
    @usableFromInline package func with(policy: CachePolicy) -> CacheUse {
        CacheUse(store: store, key: key, policy: policy, freshMs: freshMs, maxAgeMs: maxAgeMs,
                 encode: encode, decode: decode)
    }

    /// A usable entry at `now`: its value, whether it is stale, and when it
    /// was stored. Nil on a miss, an entry past the maximum age, a value
    /// that does not decode, or a store that fails (a cache never fails a load).
    func lookup(at now: UInt64) -> (value: Value, stale: Bool, storedAt: UInt64)? {
        guard let entry = try? store.get(key) else { return nil }
        let age = now > entry.storedAtMs ? now - entry.storedAtMs : 0
        if maxAgeMs > 0 && age > maxAgeMs { return nil }
        guard let value = decode(entry.value) else { return nil }
        return (value, entry.isStale || age >= freshMs, entry.storedAtMs)
    }

    /// Stores a loaded value; a failing store is ignored.
    func store(_ value: Value) {
        try? store.put(key, encode(value))
    }
}

extension CacheUse where Value == [UInt8] {
    /// A cache of byte-string values, stored as they are.
    @usableFromInline package convenience init(store: any CacheStore, key: [UInt8], policy: CachePolicy, freshMs: UInt64 = 0,
                            maxAgeMs: UInt64 = 0) {
        self.init(store: store, key: key, policy: policy, freshMs: freshMs, maxAgeMs: maxAgeMs,
                  encode: { $0 }, decode: { $0 })
    }
}
