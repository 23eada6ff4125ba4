#if canImport(Glibc)
import Glibc
#endif

/// An open persistent cache file: its connection, prepared statements,
/// counters and the accesses not yet written. Not thread-safe:
/// `PersistentCache` keeps it under its lock.
final class PersistentStore {
    private let db: SQLiteDatabase
    private let select: SQLiteStatement
    private let upsert: SQLiteStatement
    private let touch: SQLiteStatement
    private let deleteKey: SQLiteStatement
    private let deleteEvery: SQLiteStatement
    private let deleteOldest: SQLiteStatement
    private let deleteFrom: SQLiteStatement
    private let deleteRange: SQLiteStatement
    private let staleFrom: SQLiteStatement
    private let staleRange: SQLiteStatement
    private let readTotals: SQLiteStatement
    private let begin: SQLiteStatement
    private let commit: SQLiteStatement
    private let rollback: SQLiteStatement

    /// Hits, misses, evictions and expirations since the file was opened.
    var stats = CacheStats()
    /// The last access number handed out; higher is more recent.
    private var accessClock: Int64
    /// Accesses recorded by gets and not yet written, by key.
    private var pendingAccesses: [CacheKey: Int64] = [:]

    /// Opens the file, creating it with mode 0600 when missing.
    init(path: String) throws(CacheOpenFailure) {
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw .failed(.io, "open: \(String(cString: strerror(errno)))")
        }
        Glibc.close(fd)
        let db: SQLiteDatabase
        do throws(SQLiteError) {
            db = try SQLiteDatabase(path: path)
        } catch {
            throw CacheOpenFailure(error, "open")
        }
        self.db = db
        db.setBusyTimeout(ms: 5000)
        do throws(SQLiteError) {
            let mode = try db.texts("PRAGMA journal_mode = WAL")
            guard mode == ["wal"] else {
                throw SQLiteError(code: 1, message: "journal mode \(mode.first ?? "unknown") instead of wal")
            }
            try db.execute("PRAGMA synchronous = NORMAL")
        } catch {
            db.close()
            throw CacheOpenFailure(error, "set up")
        }
        do throws(CacheOpenFailure) {
            try PersistentCacheSchema.prepare(db)
        } catch {
            db.close()
            throw error
        }
        do throws(SQLiteError) {
            select = try db.prepare("SELECT stored_at, expires_at, stale, value FROM entries WHERE key = ?1")
            upsert = try db.prepare("""
                INSERT INTO entries (key, size, stored_at, expires_at, last_access, stale, value)
                VALUES (?1, ?2, ?3, ?4, ?5, 0, ?6)
                ON CONFLICT (key) DO UPDATE SET size = excluded.size, stored_at = excluded.stored_at,
                    expires_at = excluded.expires_at, last_access = excluded.last_access, stale = 0,
                    value = excluded.value
                """)
            touch = try db.prepare("UPDATE entries SET last_access = ?2 WHERE key = ?1")
            deleteKey = try db.prepare("DELETE FROM entries WHERE key = ?1")
            deleteEvery = try db.prepare("DELETE FROM entries")
            deleteOldest = try db.prepare(
                "DELETE FROM entries WHERE rowid = (SELECT rowid FROM entries ORDER BY last_access LIMIT 1)")
            deleteFrom = try db.prepare("DELETE FROM entries WHERE key >= ?1")
            deleteRange = try db.prepare("DELETE FROM entries WHERE key >= ?1 AND key < ?2")
            staleFrom = try db.prepare("UPDATE entries SET stale = 1 WHERE key >= ?1")
            staleRange = try db.prepare("UPDATE entries SET stale = 1 WHERE key >= ?1 AND key < ?2")
            readTotals = try db.prepare("SELECT entries, bytes FROM totals")
            begin = try db.prepare("BEGIN IMMEDIATE")
            commit = try db.prepare("COMMIT")
            rollback = try db.prepare("ROLLBACK")
            accessClock = try db.scalar("SELECT coalesce(max(last_access), 0) FROM entries")
        } catch {
            db.close()
            throw CacheOpenFailure(error, "prepare")
        }
    }

    /// Writes the recorded accesses (best effort) and closes the file.
    func close() {
        try? write { () throws(SQLiteError) in try flushAccesses() }
        db.close()
    }

    // MARK: - Reads

    func entry(_ key: [UInt8]) throws(SQLiteError) -> CacheEntry? {
        defer { select.reset() }
        try select.bind(1, key)
        guard try select.step() else { return nil }
        return CacheEntry(value: select.bytes(3), storedAtMs: UInt64(clamping: select.int64(0)),
                          expiresAtMs: UInt64(clamping: select.int64(1)), isStale: select.int64(2) != 0)
    }

    func totals() throws(SQLiteError) -> (entries: UInt64, bytes: UInt64) {
        defer { readTotals.reset() }
        guard try readTotals.step() else { return (0, 0) }
        return (UInt64(clamping: readTotals.int64(0)), UInt64(clamping: readTotals.int64(1)))
    }

    func integrityCheck() throws(SQLiteError) -> String {
        try db.texts("PRAGMA integrity_check").joined(separator: "\n")
    }

    /// Records a read of `key` as its most recent access; writes the
    /// recorded accesses when there are enough of them.
    func recordAccess(_ key: [UInt8]) throws(SQLiteError) {
        accessClock += 1
        pendingAccesses[CacheKey(key)] = accessClock
        if pendingAccesses.count >= PersistentCache.accessFlushThreshold {
            try write { () throws(SQLiteError) in try flushAccesses() }
        }
    }

    // MARK: - Writes (inside `write`)

    /// Runs `body` in one IMMEDIATE transaction; rolls back if it throws.
    @discardableResult
    func write<R>(_ body: () throws(SQLiteError) -> R) throws(SQLiteError) -> R {
        try begin.run()
        do throws(SQLiteError) {
            let result = try body()
            try commit.run()
            return result
        } catch {
            _ = try? rollback.run()
            throw error
        }
    }

    /// Writes the recorded accesses. They are forgotten only when the
    /// transaction commits; a failed one is retried by the next write.
    func flushAccesses() throws(SQLiteError) {
        for (key, access) in pendingAccesses {
            try touch.bind(1, key.bytes)
            try touch.bind(2, access)
            try touch.run()
        }
        pendingAccesses.removeAll(keepingCapacity: true)
    }

    func upsert(_ key: [UInt8], _ value: [UInt8], size: Int, storedAt: UInt64, expiresAt: UInt64) throws(SQLiteError) {
        accessClock += 1
        try upsert.bind(1, key)
        try upsert.bind(2, Int64(size))
        try upsert.bind(3, Int64(clamping: storedAt))
        try upsert.bind(4, Int64(clamping: expiresAt))
        try upsert.bind(5, accessClock)
        try upsert.bind(6, value)
        try upsert.run()
    }

    /// Deletes least recently used entries until the values and keys take
    /// at most `maxBytes`; how many.
    func evict(toBytes maxBytes: Int) throws(SQLiteError) -> Int {
        var evicted = 0
        while try totals().bytes > UInt64(maxBytes) {
            let n = try deleteOldest.run()
            if n == 0 { break }
            evicted += n
        }
        return evicted
    }

    @discardableResult
    func delete(_ key: [UInt8]) throws(SQLiteError) -> Int {
        try deleteKey.bind(1, key)
        return try deleteKey.run()
    }

    func deleteAll() throws(SQLiteError) {
        try deleteEvery.run()
    }

    func delete(prefix: [UInt8]) throws(SQLiteError) -> Int {
        try runPrefixed(prefix, from: deleteFrom, range: deleteRange)
    }

    func markStale(prefix: [UInt8]) throws(SQLiteError) -> Int {
        try runPrefixed(prefix, from: staleFrom, range: staleRange)
    }

    /// Runs a statement over the keys that begin with `prefix`, as the
    /// range [prefix, the next prefix) of the key index.
    private func runPrefixed(_ prefix: [UInt8], from: SQLiteStatement, range: SQLiteStatement) throws(SQLiteError) -> Int {
        guard let end = Self.successor(of: prefix) else {
            try from.bind(1, prefix)
            return try from.run()
        }
        try range.bind(1, prefix)
        try range.bind(2, end)
        return try range.run()
    }

    /// The smallest byte string above every string that begins with
    /// `prefix`; nil when there is none (the prefix is all 0xFF).
    static func successor(of prefix: [UInt8]) -> [UInt8]? {
        var end = prefix
        while let last = end.last {
            if last != 0xFF {
                end[end.count - 1] = last + 1
                return end
            }
            end.removeLast()
        }
        return nil
    }
}
