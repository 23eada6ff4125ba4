/// One optimistic value of a write (`ProcessCell.mutate`): a value shown
/// under a cache key while the write runs.
public struct OptimisticValue: Sendable {
    let store: any CacheStore
    let key: [UInt8]
    let value: [UInt8]

    /// `value` under the key `cache` gives `request`, encoded with the
    /// cache's codec: what a `LoadableCell` that loaded `request` through
    /// `cache` shows while the write runs.
    public init<Request, Value>(_ cache: LoadCache<Request, Value>, _ request: Request, _ value: Value) {
        store = cache.store
        key = Array(cache.key(request).utf8)
        self.value = cache.codec.encode(value)
    }

    /// `value` under `key` of `store`, encoded with `codec`.
    public init<Value>(_ store: any CacheStore, key: String, _ value: Value, codec: ValueCodec<Value>) {
        self.store = store
        self.key = Array(key.utf8)
        self.value = codec.encode(value)
    }
}

/// The entries of a cache under a key prefix, invalidated once a write
/// succeeded (`ProcessCell.mutate`).
public struct CachePrefix: Sendable {
    let store: any CacheStore
    let prefix: [UInt8]

    /// The entries of `store` whose keys begin with `prefix`.
    public init(_ store: any CacheStore, keysStartingWith prefix: String) {
        self.store = store
        self.prefix = Array(prefix.utf8)
    }
}

extension ProcessCell {
    /// Runs `body` as process `kind`, as `run` does, as a write: the
    /// `optimistic` values are shown first (a `MemoryCache` stores each;
    /// a `PersistentCache` or `RedisCache` is not written, taking only
    /// confirmed values; every `LoadableCell` whose last load used that
    /// cache and key shows it). If the run fails, times out, is cancelled
    /// or reset, each key gets back exactly what it held before (unless a
    /// load, a put or another write replaced it meanwhile); if it
    /// succeeds, the values stay, confirmed, and the `invalidating`
    /// prefixes are invalidated (their cells reload). All of this happens
    /// before the cell shows `.finished` or `.failed`.
    ///
    /// Throws `ResultCode.invalidArgument` for more than `mutationKeysMax`
    /// values or prefixes; nothing is shown or run then. Returns at once; `body` runs in a new task on the
    /// caller's actor.
    public func mutate(_ kind: ProcessKind, optimistic: [OptimisticValue], invalidating: [CachePrefix] = [],
                       silently: Bool = false, timeout: Duration? = nil, retries: Int = 0,
                       @_inheritActorContext _ body: sending @escaping @isolated(any) () async throws -> Void)
        throws(CacheError) {
        let run = try mutationRun(optimistic, invalidating)
        driver.load(writeSpec(kind, LoadSettings(silently: silently, timeout: timeout, interrupts: [],
                                                 retries: retries), body),
                    interrupts: nil, mutation: run)
    }

    /// `mutate` in the caller's task: returns when the cell shows how the
    /// write ended (its rollback or confirmation done).
    public func mutate(_ kind: ProcessKind, optimistic: [OptimisticValue], invalidating: [CachePrefix] = [],
                       silently: Bool = false, timeout: Duration? = nil, retries: Int = 0,
                       @_inheritActorContext _ body: sending @escaping @isolated(any) () async throws -> Void)
        async throws(CacheError) {
        let run = try mutationRun(optimistic, invalidating)
        await driver.loadInline(writeSpec(kind, LoadSettings(silently: silently, timeout: timeout, interrupts: [],
                                                             retries: retries), body),
                                interrupts: nil, mutation: run)
    }

    /// A write whose `body` returns the confirmed value: as `mutate`, and
    /// once it succeeds that value, encoded with `codec` (the codec of the
    /// caches of the `optimistic` values), is stored under every key of
    /// `optimistic` and shown by their cells instead of the optimistic
    /// values (a `PersistentCache` or `RedisCache` stores it too). Returns
    /// at once; `body` runs in a new task on the caller's actor.
    public func mutate<Value: Sendable>(_ kind: ProcessKind, optimistic: [OptimisticValue], confirming codec: ValueCodec<Value>,
                              invalidating: [CachePrefix] = [], silently: Bool = false, timeout: Duration? = nil,
                              retries: Int = 0,
                              @_inheritActorContext _ body: sending @escaping @isolated(any) () async throws -> Value)
        throws(CacheError) {
        let run = try mutationRun(optimistic, invalidating, populates: true)
        driver.load(confirmingSpec(kind, LoadSettings(silently: silently, timeout: timeout, interrupts: [],
                                                      retries: retries), codec, run, body),
                    interrupts: nil, mutation: run)
    }

    /// The write whose `body` returns the confirmed value, in the caller's
    /// task: returns when the cell shows how it ended.
    public func mutate<Value: Sendable>(_ kind: ProcessKind, optimistic: [OptimisticValue], confirming codec: ValueCodec<Value>,
                              invalidating: [CachePrefix] = [], silently: Bool = false, timeout: Duration? = nil,
                              retries: Int = 0,
                              @_inheritActorContext _ body: sending @escaping @isolated(any) () async throws -> Value)
        async throws(CacheError) {
        let run = try mutationRun(optimistic, invalidating, populates: true)
        await driver.loadInline(confirmingSpec(kind, LoadSettings(silently: silently, timeout: timeout, interrupts: [],
                                                                  retries: retries), codec, run, body),
                                interrupts: nil, mutation: run)
    }

    private func confirmingSpec<Value: Sendable>(_ kind: ProcessKind, _ settings: LoadSettings, _ codec: ValueCodec<Value>,
                                       _ run: MutationRun,
                                       _ body: @escaping @isolated(any) () async throws -> Value)
        -> LoadSpec<Void, ProcessKind> {
        let call = IsolatedBody<Void, Value>(body)
        let result = run.encodedResult
        let loader = driver.closureLoader(queue: settings.queue) { _, _ in
            let value = try await call(())
            let bytes = codec.encode(value)
            result.withLock { $0 = bytes }
        }
        return LoadSpec(loader: loader, request: kind, options: settings.options)
    }

    private func mutationRun(_ optimistic: [OptimisticValue], _ prefixes: [CachePrefix],
                             populates: Bool = false) throws(CacheError)
        -> MutationRun {
        guard optimistic.count <= mutationKeysMax, prefixes.count <= mutationKeysMax else {
            throw CacheError(.invalidArgument, "a write of \(optimistic.count) values and \(prefixes.count) prefixes "
                             + "(at most \(mutationKeysMax) of each)")
        }
        let updates = optimistic.map { MutationRun.Update(store: $0.store, key: $0.key, value: $0.value) }
        return MutationRun(updates: updates,
                           invalidations: prefixes.map { MutationRun.Invalidation(store: $0.store, prefix: $0.prefix) },
                           populates: populates)
    }

    private func writeSpec(_ kind: ProcessKind, _ settings: LoadSettings,
                           _ body: @escaping @isolated(any) () async throws -> Void) -> LoadSpec<Void, ProcessKind> {
        let call = IsolatedBody<Void, Void>(body)
        let loader = driver.closureLoader(queue: settings.queue) { _, _ in try await call(()) }
        return LoadSpec(loader: loader, request: kind, options: settings.options)
    }
}
