#if canImport(Glibc)
import Glibc
#endif

/// A cache kept in one SQLite file, which outlives the process: bounded
/// in bytes with least-recently-used eviction, entries with a time to live.
///
/// Durability: the file is in WAL mode with `synchronous = NORMAL`, and
/// every write is one transaction. A put that returned is in the WAL (in
/// the operating system's page cache) and survives the process being
/// killed at any moment; the database always opens intact. Only an
/// operating-system crash or power loss can lose the last writes (never
/// corrupt the file): `FULL` would fsync every commit to cover that, at a
/// cost a cache does not need.
///
/// Checkpoints: the WAL is copied into the file on a thread of the cache's
/// own (`WALCheckpointer`), not in the commits, so that a put, or a load
/// storing its value on the loop thread, does not wait for the disk's
/// syncs; a writer copies the rest itself only once the WAL passes 4,000
/// pages. `close` ends the thread.
///
/// Recency: a get does not write. It records the access in memory; an
/// access is written when its entry reaches the old end of the order during
/// an eviction (so the order stays exact), and all of them by `close` or
/// once `Options.pendingAccessLimit` entries have one. Accesses recorded
/// when the process is killed are lost: only the eviction order suffers.
///
/// Lifecycle: `init` opens (and creates, with mode 0600) the file or
/// throws; every operation runs on the calling thread under the cache's
/// lock; `close` (or the runtime's close) writes the recorded accesses and
/// closes the file; after it, operations throw `ResultCode.closed`.
public final class PersistentCache: Handle, CacheStore, @unchecked Sendable {
    /// The bounds of a persistent cache.
    public struct Options: Sendable {
        /// Most bytes of keys and values held.
        public var maxBytes: Int
        /// Default time to live of an entry, in ms; 0: entries do not expire.
        public var ttlMs: UInt64
        /// Whether a file that is not a cache of this version is deleted and
        /// created anew (otherwise opening it throws `ResultCode.io`).
        public var replaceDamaged: Bool
        /// Entries whose last access may be held in memory (about 40 bytes
        /// each) before all of them are written in one transaction.
        public var pendingAccessLimit: Int

        /// Bounds; the defaults hold up to 256 MiB of entries that never expire.
        public init(maxBytes: Int = 256 << 20, ttlMs: UInt64 = 0, replaceDamaged: Bool = false,
                    pendingAccessLimit: Int = 262_144) {
            self.maxBytes = maxBytes
            self.ttlMs = ttlMs
            self.replaceDamaged = replaceDamaged
            self.pendingAccessLimit = pendingAccessLimit
        }
    }

    /// `PRAGMA user_version` of the files this library writes.
    @usableFromInline package static var schemaVersion: Int64 { PersistentCacheSchema.version }

    /// The cache file.
    public let path: String
    public var name: String { path }
    /// The bounds the cache was opened with.
    public let options: Options
    private let now: @Sendable () -> UInt64
    /// nil once closed.
    private let store: Locked<PersistentStore?>

    /// Opens the cache file at `path`, creating it (mode 0600) if missing.
    /// Throws `ResultCode.io` when the file cannot be opened, or is not a
    /// cache of this schema version and `replaceDamaged` is false; the
    /// message names the file. `now` gives wall-clock milliseconds.
    @usableFromInline package init(id: UInt64, path: String, options: Options = Options(),
                now: @escaping @Sendable () -> UInt64 = Clock.wallMs) throws(CacheError) {
        self.path = path
        self.options = options
        self.now = now
        store = Locked(try Self.open(path: path, options: options))
        super.init(id: id)
    }

    private static func open(path: String, options: Options) throws(CacheError) -> PersistentStore {
        do throws(CacheOpenFailure) {
            return try PersistentStore(path: path, pendingLimit: options.pendingAccessLimit)
        } catch {
            guard case .damaged = error, options.replaceDamaged else { throw error.error(path: path) }
        }
        for suffix in ["", "-wal", "-shm", "-journal"] {
            unlink(path + suffix)
        }
        do throws(CacheOpenFailure) {
            return try PersistentStore(path: path, pendingLimit: options.pendingAccessLimit)
        } catch {
            throw error.error(path: path)
        }
    }

    public func get(_ key: [UInt8]) throws(CacheError) -> CacheEntry? {
        try key.withUnsafeBytes { raw in Result { () throws(CacheError) in try read(raw) { $0.entry } } }.get()
    }

    /// The live entry under `key` seen in place by `body`, under the
    /// cache's lock (keep it short; the view is valid inside it only), its
    /// access recorded; nil on a miss (an expired entry is deleted). Counts
    /// the hit or miss. Throws like `get`. No copy of the key or the entry
    /// is made: `body` reads SQLite's memory.
    @usableFromInline package func read<R>(_ key: UnsafeRawBufferPointer,
                                           _ body: (CacheEntryView) -> R) throws(CacheError) -> R? {
        let nowMs = now()
        return try withStore("get") { s throws(SQLiteError) in try Self.lookup(s, key, nowMs: nowMs, body) }
    }

    /// The entries under `keys`, under one acquisition of the lock (see
    /// `CacheStore.entries(for:)`); a key whose statement fails fails alone.
    public func entries(for keys: [[UInt8]]) throws(CacheError) -> [Result<CacheEntry?, CacheError>] {
        try checkBatch(keys.count)
        let nowMs = now()
        return try withStore("get") { s in
            keys.map { key in
                do throws(SQLiteError) {
                    return .success(try key.withUnsafeBytes { raw in
                        Result { () throws(SQLiteError) in try Self.lookup(s, raw, nowMs: nowMs) { $0.entry } }
                    }.get())
                } catch {
                    return .failure(failure(error, "get"))
                }
            }
        }
    }

    /// What `body` makes of the live entry under `key`, its access
    /// recorded; nil on a miss (an expired entry is deleted). Counts the
    /// hit or miss. Under the lock.
    private static func lookup<R>(_ s: PersistentStore, _ key: UnsafeRawBufferPointer, nowMs: UInt64,
                                  _ body: (CacheEntryView) -> R) throws(SQLiteError) -> R? {
        let found = try s.withEntry(key) { rowid, view -> LookupOutcome<R> in
            view.isExpired(at: nowMs) ? .expired : .live(rowid, body(view))
        }
        switch found {
        case nil:
            s.stats.misses += 1
            return nil
        case .expired?:
            try s.write { () throws(SQLiteError) in try s.delete([UInt8](key)) }
            s.stats.expirations += 1
            s.stats.misses += 1
            return nil
        case .live(let rowid, let result)?:
            s.recordAccess(rowid)
            s.stats.hits += 1
            return result
        }
    }

    /// Stores with the cache's time to live unless `ttlMs` says otherwise (see `CacheStore`).
    public func put(_ key: [UInt8], _ value: [UInt8], ttlMs: UInt64?) throws(CacheError) {
        try put(key, value, ttlMs: ttlMs, meta: [])
    }

    /// Stores with `meta` beside the value (see `CacheStore`).
    public func put(_ key: [UInt8], _ value: [UInt8], ttlMs: UInt64?, meta: [UInt8]) throws(CacheError) {
        let nowMs = now()
        let expires = CacheEntry.expiry(storedAt: nowMs, ttlMs: ttlMs ?? options.ttlMs)
        let size = key.count + value.count + meta.count
        let maxBytes = options.maxBytes
        try withStore("put") { s throws(SQLiteError) in
            if size > maxBytes {
                try s.write { () throws(SQLiteError) in try s.delete(key) }
                s.stats.evictions += 1
                return
            }
            let evicted = try s.write { () throws(SQLiteError) -> Int in
                try s.upsert(key, value, meta: meta, size: size, storedAt: nowMs, expiresAt: expires)
                return try s.evict(toBytes: maxBytes)
            }
            s.stats.evictions += UInt64(evicted)
        }
    }

    @discardableResult
    public func remove(_ key: [UInt8]) throws(CacheError) -> Bool {
        try withStore("remove") { s throws(SQLiteError) in
            try s.write { () throws(SQLiteError) in try s.delete(key) } > 0
        }
    }

    public func clear() throws(CacheError) {
        try withStore("clear") { s throws(SQLiteError) in
            try s.write { () throws(SQLiteError) in try s.deleteAll() }
        }
    }

    public func stats() throws(CacheError) -> CacheStats {
        try withStore("stats") { s throws(SQLiteError) in
            var stats = s.stats
            (stats.entries, stats.bytes) = try s.totals()
            return stats
        }
    }

    /// The keys of the live entries that begin with `prefix`, in byte order
    /// (see `CacheStore.keys(prefix:)`).
    public func keys(prefix: [UInt8]) throws(CacheError) -> [[UInt8]] {
        let nowMs = now()
        return try withStore("keys") { s throws(SQLiteError) in try s.keys(prefix: prefix, liveAt: nowMs) }
    }

    /// How many live entries begin with `prefix`, up to `limit` (see
    /// `CacheStore.count(prefix:limit:)`).
    public func count(prefix: [UInt8], limit: UInt64) throws(CacheError) -> UInt64 {
        let nowMs = now()
        return try withStore("count") { s throws(SQLiteError) in
            try s.countLive(prefix: prefix, liveAt: nowMs, limit: limit)
        }
    }

    @discardableResult
    public func markStale(prefix: [UInt8]) throws(CacheError) -> Int {
        try withStore("mark stale") { s throws(SQLiteError) in
            try s.write { () throws(SQLiteError) in try s.markStale(prefix: prefix) }
        }
    }

    @discardableResult
    public func removeAll(prefix: [UInt8]) throws(CacheError) -> Int {
        try withStore("remove prefix") { s throws(SQLiteError) in
            try s.write { () throws(SQLiteError) in try s.delete(prefix: prefix) }
        }
    }

    override func shutdown(runtime: Runtime) {
        close()
    }

    public func close() {
        store.withLock { s in
            s?.close()
            s = nil
        }
    }

    /// How many checkpoints of the file's log its thread has run (see
    /// `WALCheckpointer`); for tests.
    var backgroundCheckpoints: UInt64 { store.withLock { $0?.backgroundCheckpoints ?? 0 } }

    /// `PRAGMA integrity_check`: "ok" for a sound file.
    func integrityCheck() throws(CacheError) -> String {
        try withStore("integrity check") { s throws(SQLiteError) in
            try s.integrityCheck()
        }
    }

    /// Runs `body` on the open store under the lock; SQLite failures become
    /// `CacheError`s naming the file and the operation.
    /// Runs `body` on the store under the cache's lock. When another
    /// connection (another process) holds the file's write lock, SQLite
    /// answers "busy" at once; the call is then made again after a pause,
    /// outside the lock, for up to `PersistentStore.busyTimeoutMs` in all,
    /// so that no caller waits behind another's wait. On a runtime's loop
    /// thread (a load reading or storing its value) it is not made again:
    /// it fails at once, and the load goes on without the cache.
    private func withStore<R>(_ operation: String,
                              _ body: (PersistentStore) throws(SQLiteError) -> R) throws(CacheError) -> R {
        let mayWait = !EventLoop.isCurrentThreadALoop
        var wait = PersistentStore.BusyWait()
        while true {
            let result = store.withLock { s -> Result<R, SQLiteError>? in
                guard let s else { return nil }
                do throws(SQLiteError) {
                    return .success(try body(s))
                } catch {
                    return .failure(error)
                }
            }
            switch result {
            case nil:
                throw CacheError(.closed, "cache file \(path) is closed")
            case .success(let value)?:
                return value
            case .failure(let error)?:
                guard error.isBusy, mayWait, wait.pause() else { throw failure(error, operation) }
            }
        }
    }

    /// An SQLite failure of `operation` as a `CacheError` naming the file.
    private func failure(_ error: SQLiteError, _ operation: String) -> CacheError {
        CacheError(ResultCode(sqlite: error.code), "cache file \(path): \(operation): \(error.message)")
    }
}

/// What `PersistentCache.lookup` found under a key: a live entry (its
/// rowid, and what the caller made of it) or an expired one.
private enum LookupOutcome<R> {
    case live(Int64, R)
    case expired
}

