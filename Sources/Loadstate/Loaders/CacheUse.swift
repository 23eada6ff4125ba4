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
    /// Whether the loader's own rules for its values apply (the http
    /// loader's: `Cache-Control`, `Expires`, `Vary` of the responses it
    /// stores); false leaves every decision to this use's ages and stores
    /// every value.
    @usableFromInline package let followsLoaderRules: Bool
    /// A reload after an invalidation: in a cache shared by processes, any
    /// entry that is not stale is the reload's result (the invalidation
    /// marked every older one stale), so another process's reload serves it.
    package private(set) var afterInvalidation = false

    @usableFromInline package init(store: any CacheStore, key: [UInt8], policy: CachePolicy, freshMs: UInt64 = 0,
                maxAgeMs: UInt64 = 0, followsLoaderRules: Bool = true, encode: @escaping (Value) -> [UInt8],
                decode: @escaping ([UInt8]) -> Value?) {
        self.store = store
        self.key = key
        self.policy = policy
        self.freshMs = freshMs
        self.maxAgeMs = maxAgeMs
        self.followsLoaderRules = followsLoaderRules
        self.encode = encode
        self.decode = decode
    }

    /// The use of a silent reload after an invalidation: load only, and
    /// `afterInvalidation`.
    func forReloadAfterInvalidation() -> CacheUse {
        let use = with(policy: .loadOnly)
        use.afterInvalidation = true
        return use
    }

    /// The same use with another policy.
    @usableFromInline package func with(policy: CachePolicy) -> CacheUse {
        CacheUse(store: store, key: key, policy: policy, freshMs: freshMs, maxAgeMs: maxAgeMs,
                 followsLoaderRules: followsLoaderRules, encode: encode, decode: decode)
    }

    /// A usable entry at `now`: its value, whether it is stale, whether a
    /// cache-first load may show it while it is revalidated, when it was
    /// stored, and the error it stands for, if any. Nil on a miss, an entry
    /// past the maximum age or judged unusable, a value that does not
    /// decode, or a store that fails (a cache never fails a load). `read`
    /// is the loader's (see `Loader.read`), asked when this use follows the
    /// loader's rules; when it has none, the entry is fresh while younger
    /// than `freshMs`.
    /// `wantsStale`: false when a stale entry would not be shown (a
    /// cache-first load loads instead): it is then a miss, and nothing is
    /// decoded or rendered for it.
    func lookup(at now: UInt64, wantsStale: Bool = true, read: (CacheEntry) -> CacheReading? = { _ in nil })
        -> (value: Value, stale: Bool, serveWhileRevalidating: Bool, storedAt: UInt64, error: LoadError?)? {
        guard let entry = entry(at: now) else { return nil }
        let age = now > entry.storedAtMs ? now - entry.storedAtMs : 0
        var stale = age >= freshMs
        var whileRevalidating = false
        var shown = entry.value
        var error: LoadError?
        var storedAt = entry.storedAtMs
        if followsLoaderRules, let reading = read(entry) {
            switch reading.judgement {
            case .unusable: return nil
            case .fresh: stale = false
            case .staleWhileRevalidate: (stale, whileRevalidating) = (true, true)
            case .stale: stale = true
            }
            if stale && !whileRevalidating && !wantsStale { return nil }
            if let render = reading.render { shown = render() }
            error = reading.error
            storedAt = reading.storedAtMs ?? storedAt
        }
        guard let value = decode(shown) else { return nil }
        return (value, entry.isStale || stale, whileRevalidating && !entry.isStale, storedAt, error)
    }

    /// The entry under the key as it is stored, if it is younger than the
    /// maximum age (for a loader that revalidates it); nil on a miss or a
    /// store that fails.
    public func entry(at now: UInt64) -> CacheEntry? {
        guard let entry = try? store.get(key) else { return nil }
        let age = now > entry.storedAtMs ? now - entry.storedAtMs : 0
        if maxAgeMs > 0 && age > maxAgeMs { return nil }
        return entry
    }

    /// Stores a loaded value, as `write` says when its loader gave one; a
    /// failing store is ignored.
    func store(_ value: Value, write: CacheWrite? = nil, lease: UInt64 = 0) {
        if lease != 0, let redis = store as? RedisCache {
            // The holder of a Redis lease stores under it (fenced) and
            // publishes; otherwise it gives the lease back.
            for removed in write?.removes ?? [] { _ = try? store.remove(removed) }
            for prefix in write?.removesPrefixes ?? [] { _ = try? store.removeAll(prefix: prefix) }
            switch write?.entry ?? .store {
            case .store:
                redis.publish(key, write?.storedValue ?? encode(value), meta: write?.meta ?? [], token: lease)
                for other in write?.alsoStoredUnder ?? [] {
                    try? store.put(other, write?.storedValue ?? encode(value), ttlMs: nil, meta: write?.meta ?? [])
                }
            case .keep: redis.release(key, token: lease)
            case .remove:
                _ = try? store.remove(key)
                redis.release(key, token: lease)
            }
            return
        }
        guard let write else {
            try? store.put(key, encode(value))
            return
        }
        apply(write, value: write.storedValue ?? encode(value))
    }

    /// Applies what a loader's `write` says besides the value (`value`:
    /// the bytes to store, when the entry is stored): its removals, then
    /// the entry and its other keys. A failing store is ignored.
    func apply(_ write: CacheWrite, value: @autoclosure () -> [UInt8]?) {
        for removed in write.removes { _ = try? store.remove(removed) }
        for prefix in write.removesPrefixes { _ = try? store.removeAll(prefix: prefix) }
        switch write.entry {
        case .store:
            guard let bytes = value() else { return }
            try? store.put(key, bytes, ttlMs: nil, meta: write.meta)
            for other in write.alsoStoredUnder { try? store.put(other, bytes, ttlMs: nil, meta: write.meta) }
        case .keep: break
        case .remove: _ = try? store.remove(key)
        }
    }
}

extension CacheUse where Value == [UInt8] {
    /// A cache of byte-string values, stored as they are.
    @usableFromInline package convenience init(store: any CacheStore, key: [UInt8], policy: CachePolicy, freshMs: UInt64 = 0,
                            maxAgeMs: UInt64 = 0, followsLoaderRules: Bool = true) {
        self.init(store: store, key: key, policy: policy, freshMs: freshMs, maxAgeMs: maxAgeMs,
                  followsLoaderRules: followsLoaderRules, encode: { $0 }, decode: { $0 })
    }
}
