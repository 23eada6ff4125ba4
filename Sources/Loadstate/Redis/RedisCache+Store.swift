extension RedisCache {
    public func get(_ key: [UInt8]) throws(CacheError) -> CacheEntry? {
        if loop.isLoopThread {
            if let fetched, fetched.key == key { return fetched.entry }
            return frontEntry(key)
        }
        return try onLoop { [self] done in
            fetch(key) { entry, failure in
                done(failure.map { .failure(self.cacheError($0, noted: true)) } ?? .success(entry))
            }
        }
    }

    public func put(_ key: [UInt8], _ value: [UInt8], ttlMs: UInt64?) throws(CacheError) {
        try put(key, value, ttlMs: ttlMs, meta: [])
    }

    public func put(_ key: [UInt8], _ value: [UInt8], ttlMs: UInt64?, meta: [UInt8]) throws(CacheError) {
        if let failure = oversize(value, meta) {
            if loop.isLoopThread {
                noteFailure(failure)
                remove(key, done: { _ in })
                return
            }
            throw cacheError(failure)
        }
        if loop.isLoopThread {
            return store(key, value, meta: meta, ttlMs: ttlMs) { _ in }
        }
        try onLoop { [self] done in store(key, value, meta: meta, ttlMs: ttlMs, done) }
    }

    /// Loop: SET and index, then tell the other processes (their front
    /// entries go).
    private func store(_ key: [UInt8], _ value: [UInt8], meta: [UInt8], ttlMs: UInt64?,
                       _ done: @escaping (Result<Void, CacheError>) -> Void) {
        let (encoded, ttl) = entry(value, meta: meta, ttlMs: ttlMs, token: 0)
        front?.put(key, encoded)
        let write: [[UInt8]]
        if isCluster {
            index(key, ttl: ttl)
            write = [RedisCache.arg("EVAL"), RedisCache.arg(RedisScripts.storeEntry), RedisCache.arg("1"),
                     entryKey(key), encoded, RedisCache.arg(ttl), channel, message("D", key)]
        } else {
            write = [RedisCache.arg("EVAL"), RedisCache.arg(RedisScripts.store), RedisCache.arg("3"),
                     entryKey(key), keyNames.keysIndex, keyNames.expiryIndex,
                     encoded, RedisCache.arg(ttl), key, channel, message("D", key)]
        }
        command(write) {
            switch $0 {
            case .success: done(.success(()))
            case .failure(let error): done(.failure(error))
            }
        }
    }

    @discardableResult
    public func remove(_ key: [UInt8]) throws(CacheError) -> Bool {
        if loop.isLoopThread {
            // A load's own removal: sent without waiting; whether there was
            // an entry is not known here.
            remove(key) { _ in }
            return false
        }
        return try onLoop { [self] done in remove(key, done: done) }
    }

    private func remove(_ key: [UInt8], done: @escaping (Result<Bool, CacheError>) -> Void) {
        front?.remove(key)
        command(isCluster
                ? [RedisCache.arg("EVAL"), RedisCache.arg(RedisScripts.removeEntry), RedisCache.arg("1"),
                   entryKey(key), channel, message("C", key)]
                : [RedisCache.arg("EVAL"), RedisCache.arg(RedisScripts.remove), RedisCache.arg("3"),
                   entryKey(key), keyNames.keysIndex, keyNames.expiryIndex, key, channel, message("C", key)]) {
            switch $0 {
            case .success(let reply):
                done(.success((reply.integer ?? 0) > 0))
            case .failure(let error): done(.failure(error))
            }
        }
    }

    public func clear() throws(CacheError) {
        _ = try sweep(prefix: [], delete: true)
    }

    public func stats() throws(CacheError) -> CacheStats {
        guard !isClosed else { throw CacheError(.closed, "\(name): closed") }
        let (hits, misses) = counters.withLock { ($0.hits, $0.misses) }
        var stats = front?.stats() ?? CacheStats()
        stats.hits = hits
        stats.misses = misses
        return stats
    }
}
