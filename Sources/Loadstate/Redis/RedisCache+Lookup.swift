extension RedisCache {
    /// The front tier's entry under `key`, if it has a live one.
    func frontEntry(_ key: [UInt8]) -> CacheEntry? {
        guard let bytes = front?.get(key)?.value else { return nil }
        return RedisEntry.decode(bytes)
    }

    /// Loop: whether a lookup of `key` needs no round trip (the front tier has it).
    func hasLocalEntry(_ key: [UInt8]) -> Bool { frontEntry(key) != nil }

    /// Loop: the entry under `key` (nil on a miss), or the failure.
    func fetch(_ key: [UInt8], _ done: @escaping (CacheEntry?, RedisFailure?) -> Void) {
        if let entry = frontEntry(key) {
            counters.withLock { $0.hits &+= 1 }
            return done(entry, nil)
        }
        fetchFromRedis(key) { [self] outcome in
            switch outcome {
            case .hit(let entry, _):
                counters.withLock { $0.hits &+= 1 }
                done(entry, nil)
            case .miss:
                counters.withLock { $0.misses &+= 1 }
                done(nil, nil)
            case .failed(let failure):
                noteFailure(failure)
                done(nil, failure)
            }
        }
    }

    /// Loop: the GET of `key`'s entry, what it says; a hit goes to the
    /// front tier.
    func fetchFromRedis(_ key: [UInt8], _ done: @escaping (GetOutcome) -> Void) {
        guard isOpen else { return done(.failed(RedisFailure(.closed, "the cache was closed"))) }
        send(RedisCommand(getEntry: options.keyPrefix, key), key: isCluster ? entryKey(key) : nil) { [self] result in
            let outcome = RedisCache.outcome(of: result, at: Clock.wallMs())
            if case .hit(_, let bytes) = outcome { front?.put(key, bytes) }
            done(outcome)
        }
    }

    /// What a GET's reply says.
    enum GetOutcome {
        /// A live entry, and its stored form (for the front tier).
        case hit(CacheEntry, [UInt8])
        /// No entry, an expired one, or one that does not decode.
        case miss
        case failed(RedisFailure)
    }

    private static func outcome(of result: Result<RedisReply, RedisFailure>, at nowMs: UInt64) -> GetOutcome {
        switch result {
        case .success(.string(let bytes)):
            guard let entry = RedisEntry.decode(bytes), !entry.isExpired(at: nowMs) else { return .miss }
            return .hit(entry, bytes)
        case .success(.null): return .miss
        case .success(.error(let message)): return .failed(RedisFailure(.reply, message))
        case .success: return .failed(RedisFailure(.reply, "GET answered with another type"))
        case .failure(let failure): return .failed(failure)
        }
    }

    /// Loop: runs `body` with what a lookup fetched visible to `get`.
    func withFetched(_ key: [UInt8], _ entry: CacheEntry?, failure: RedisFailure?, _ body: () -> Void) {
        let saved = fetched
        fetched = (key, entry, failure)
        body()
        fetched = saved
    }

    /// Loop: the failure of the lookup `withFetched` shows, if it failed.
    func fetchFailure(_ key: [UInt8]) -> RedisFailure? {
        guard let fetched, fetched.key == key else { return nil }
        return fetched.failure
    }
}
