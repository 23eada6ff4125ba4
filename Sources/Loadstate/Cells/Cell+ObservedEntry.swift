/// The memory cache entry a cell observes: its last load used this cache
/// and key (see `MemoryCache.Options.unobservedMs`).
struct ObservedEntry {
    let cache: MemoryCache
    let key: [UInt8]
}

extension Cell {
    /// Loop: the cell observes the entry `use` names from now on (nil, or a
    /// cache that does not drop unobserved entries: none), and stops
    /// observing the one it observed before. Prefetches observe nothing:
    /// what they store starts its grace at once.
    func observeCacheEntry(_ use: CacheUse<Value>?) {
        var next: ObservedEntry?
        if let use, flavor == .loadable, !isPrefetch, let memory = use.store as? MemoryCache, memory.dropsUnobserved {
            next = ObservedEntry(cache: memory, key: use.key)
        }
        let current = observedEntry
        if let current, let next, current.cache === next.cache, current.key == next.key { return }
        if current == nil && next == nil { return }
        if let next { next.cache.observe(next.key) }
        if let current { current.cache.release(current.key) }
        observedEntry = next
    }
}
