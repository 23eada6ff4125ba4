extension RedisCache {
    /// The keys stored under `prefix`: read from the key index in batches
    /// of `sweepBatch`, each batch's entries checked in one script (the
    /// index may still name a key whose entry expired within the minute).
    public func keys(prefix: [UInt8]) throws(CacheError) -> [[UInt8]] {
        let limit = LDS_REDIS_KEYS_MAX_VALUE
        return try onLoopWithProgress { [self] progressed, done in
            var found: [[UInt8]] = []
            indexBatches(prefix: prefix, each: { keys, next in
                let checked: (Result<[Bool], CacheError>) -> Void = { result in
                    switch result {
                    case .success(let flags):
                        for (key, flag) in zip(keys, flags) where flag { found.append(key) }
                        guard found.count <= limit else {
                            return next(.failure(CacheError(.tooBig, "\(self.name): more than \(limit) keys under the prefix")))
                        }
                        progressed()
                        next(.success(()))
                    case .failure(let error): next(.failure(error))
                    }
                }
                if self.isCluster { return self.existing(keys, checked) }
                self.command([RedisCache.arg("EVAL"), RedisCache.arg(RedisScripts.exist), RedisCache.arg(keys.count)]
                             + keys.map(self.entryKey)) {
                    switch $0 {
                    case .success(.array(let flags)) where flags.count == keys.count:
                        checked(.success(flags.map { $0.integer == 1 }))
                    case .success: checked(.failure(CacheError(.redis, "\(self.name): unexpected reply")))
                    case .failure(let error): checked(.failure(error))
                    }
                }
            }, done: { result in done(result.map { found }) })
        }
    }

    @discardableResult
    public func markStale(prefix: [UInt8]) throws(CacheError) -> Int {
        front?.removeAll(prefix: prefix)
        return try sweep(prefix: prefix, delete: false)
    }

    @discardableResult
    public func removeAll(prefix: [UInt8]) throws(CacheError) -> Int {
        try sweep(prefix: prefix, delete: true)
    }

    /// How many keys one step of an invalidation reads from the index and
    /// changes in one script: Redis answers nobody else while the script
    /// runs (a few ms for 250 keys: see bench/README.md).
    static let sweepBatch = 250

    /// Marks stale (or deletes) the entries under `prefix`, and tells the
    /// other processes. Waits while batches keep coming.
    func sweep(prefix: [UInt8], delete: Bool) throws(CacheError) -> Int {
        front?.removeAll(prefix: prefix)
        return try onLoopWithProgress { [self] progressed, done in
            sweep(prefix: prefix, delete: delete, progressed: progressed, done)
        }
    }

    /// Loop: `sweep`'s work, `done` with its count. The keys come from the
    /// key index, so the work grows with the keys under `prefix`, not with
    /// the database; each batch is one script. The message goes out
    /// whether every batch worked or not: the other processes drop their
    /// front entries either way.
    private func sweep(prefix: [UInt8], delete: Bool, progressed: @escaping () -> Void = {},
                       _ done: @escaping (Result<Int, CacheError>) -> Void) {
        var changed = 0
        indexBatches(prefix: prefix, each: { [self] keys, next in
            if isCluster {
                return sweepEach(keys, delete: delete) { result in
                    if case .success(let n) = result {
                        changed = changed.addingReportingOverflow(n).partialValue
                        progressed()
                    }
                    next(result.map { _ in () })
                }
            }
            command([RedisCache.arg("EVAL"), RedisCache.arg(RedisScripts.sweep), RedisCache.arg(keys.count + 2),
                     keyNames.keysIndex, keyNames.expiryIndex] + keys.map(entryKey)
                    + [RedisCache.arg(delete ? "delete" : "stale")] + keys) {
                switch $0 {
                case .success(let reply):
                    changed = changed.addingReportingOverflow(Int(clamping: reply.integer ?? 0)).partialValue
                    progressed()
                    next(.success(()))
                case .failure(let error): next(.failure(error))
                }
            }
        }, done: { [self] result in
            command([RedisCache.arg("PUBLISH"), channel, message(delete ? "C" : "I", prefix)]) { _ in }
            done(result.map { changed })
        })
    }

    /// Loop, cluster: writes `key` in the index (before its entry, so that
    /// the index names every stored key). Sent without waiting.
    func index(_ key: [UInt8], ttl: UInt64) {
        command([RedisCache.arg("EVAL"), RedisCache.arg(RedisScripts.index), RedisCache.arg("2"),
                 keyNames.keysIndex, keyNames.expiryIndex, key, RedisCache.arg(ttl)]) { _ in }
    }

    /// Loop, cluster: marks stale (or deletes) the entries of `keys`, each
    /// by a script on its master; `done` with how many changed, or the
    /// first failure, once every one answered.
    private func sweepEach(_ keys: [[UInt8]], delete: Bool, _ done: @escaping (Result<Int, CacheError>) -> Void) {
        commandEach(keys, { [self] key in
            [RedisCache.arg("EVAL"), RedisCache.arg(RedisScripts.sweepEntry), RedisCache.arg("1"), entryKey(key),
             RedisCache.arg(delete ? "delete" : "stale")]
        }) { result in
            done(result.map { replies in replies.reduce(0) { $0 &+ Int(clamping: $1.integer ?? 0) } })
        }
    }

    /// Loop, cluster: which of `keys` have an entry, each asked of its master.
    private func existing(_ keys: [[UInt8]], _ done: @escaping (Result<[Bool], CacheError>) -> Void) {
        commandEach(keys, { [self] key in [RedisCache.arg("EXISTS"), entryKey(key)] }) { result in
            done(result.map { replies in replies.map { $0.integer == 1 } })
        }
    }

    /// Loop, cluster: sends the command `args(key)` for each of `keys` (each
    /// to its key's master); `done` once every one answered, with the
    /// replies in the order of `keys`, or the first failure.
    private func commandEach(_ keys: [[UInt8]], _ args: ([UInt8]) -> [[UInt8]],
                             _ done: @escaping (Result<[RedisReply], CacheError>) -> Void) {
        guard !keys.isEmpty else { return done(.success([])) }
        var remaining = keys.count
        var replies = [RedisReply](repeating: .null, count: keys.count)
        var failure: CacheError?
        for (i, key) in keys.enumerated() {
            command(args(key)) { result in
                switch result {
                case .success(let reply): replies[i] = reply
                case .failure(let error): failure = failure ?? error
                }
                remaining -= 1
                if remaining == 0 { done(failure.map { .failure($0) } ?? .success(replies)) }
            }
        }
    }

    /// Loop: hands the indexed keys under `prefix` to `each`, a batch of at
    /// most `sweepBatch` at a time, in order; the next batch is read when
    /// `each` passes on success; `done` after the last batch or the first
    /// failure.
    private func indexBatches(prefix: [UInt8],
                              each: @escaping ([[UInt8]], @escaping (Result<Void, CacheError>) -> Void) -> Void,
                              done: @escaping (Result<Void, CacheError>) -> Void) {
        let (first, end) = RedisKeys.lexRange(prefix)
        let batch = RedisCache.sweepBatch
        func read(from start: [UInt8]) {
            command([RedisCache.arg("ZRANGEBYLEX"), keyNames.keysIndex, start, end,
                     RedisCache.arg("LIMIT"), RedisCache.arg("0"), RedisCache.arg(batch)]) { [self] in
                switch $0 {
                case .success(.array(let items)):
                    let keys = items.compactMap(\.bytes)
                    guard let last = keys.last else { return done(.success(())) }
                    each(keys) { result in
                        if case .failure = result { return done(result) }
                        if items.count < batch { return done(.success(())) }
                        read(from: [UInt8(ascii: "(")] + last)
                    }
                case .success: done(.failure(CacheError(.redis, "\(name): unexpected reply to ZRANGEBYLEX")))
                case .failure(let error): done(.failure(error))
                }
            }
        }
        read(from: first)
    }

    /// Loop: marks the entries under `prefix` stale without waiting (an
    /// invalidation asked on the loop thread: the inspector's), then `done`
    /// whether it worked or not (the cells reload either way).
    func markStaleFromLoop(prefix: [UInt8], _ done: @escaping () -> Void) {
        front?.removeAll(prefix: prefix)
        sweep(prefix: prefix, delete: false) { _ in done() }
    }
}
