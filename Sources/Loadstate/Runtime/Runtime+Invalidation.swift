extension Runtime {
    /// Marks the entries of `cache` whose keys begin with `prefix` stale;
    /// every cell of this runtime showing one of them, with no load
    /// running, reloads it silently from its loader (flagged stale
    /// meanwhile). Throws when the cache is closed or cannot be written.
    public func invalidate(_ cache: any CacheStore, keysStartingWith prefix: String) throws(CacheError) {
        try invalidate(cache, prefix: Array(prefix.utf8))
    }
}
