extension MemoryCache {
    /// A memory cache for Swift cells: least recently used entries go first
    /// once it holds more than `options.maxEntries` entries or
    /// `options.maxBytes` bytes; entries expire after `options.ttlMs` (0:
    /// never). Safe to use from any thread.
    public convenience init(name: String, options: Options = Options(), runtime: Runtime = .shared) {
        self.init(id: runtime.table.makeID(.cache), name: name, options: options)
    }
}

extension PersistentCache {
    /// A persistent cache for Swift cells: one SQLite file at `path`
    /// (created with mode 0600), bounded by `options.maxBytes`. Throws
    /// `CacheError` when the file cannot be opened or is not such a cache.
    public convenience init(path: String, options: Options = Options(), runtime: Runtime = .shared) throws(CacheError) {
        try self.init(id: runtime.table.makeID(.cache), path: path, options: options)
    }
}
