#if canImport(Glibc)
import Glibc
#endif

/// An open persistent cache file: its connection, prepared statements,
/// counters and the accesses not yet written. Not thread-safe:
/// `PersistentCache` keeps it under its lock.
///
/// Recency: every get and put takes the next number of `accessClock`. A
/// put writes it with the entry; a get only records it in memory, by rowid
/// (`pendingAccesses`). Eviction walks the rows from the oldest
/// `last_access`: a row with a recorded access is first moved to its true
/// place (the access is written), so the order is exact while gets write
/// nothing until their entry reaches the old end. Every recorded access is
/// written by `close`, and when `pendingLimit` rows have one.
final class PersistentStore {
    private let db: SQLiteDatabase
    private let select: SQLiteStatement
    private let upsert: SQLiteStatement
    private let touch: SQLiteStatement
    private let selectOldest: SQLiteStatement
    private let deleteRow: SQLiteStatement
    private let deleteKey: SQLiteStatement
    private let deleteEvery: SQLiteStatement
    private let deleteFrom: SQLiteStatement
    private let deleteRange: SQLiteStatement
    private let staleFrom: SQLiteStatement
    private let staleRange: SQLiteStatement
    private let keysFrom: SQLiteStatement
    private let keysRange: SQLiteStatement
    private let readTotals: SQLiteStatement
    private let begin: SQLiteStatement
    private let commit: SQLiteStatement
    private let rollback: SQLiteStatement
    /// Checkpoints the file's log off the writers' threads; nil when its
    /// thread could not start (SQLite then checkpoints in the commits).
    private let checkpointer: WALCheckpointer?
    private var isClosed = false

    /// Hits, misses, evictions and expirations since the file was opened.
    var stats = CacheStats()
    /// The last access number handed out; higher is more recent.
    private var accessClock: Int64
    /// Accesses recorded by gets and not yet written: rowid to access.
    private var pendingAccesses: [Int64: Int64] = [:]
    private let pendingLimit: Int

    /// How long a call off the loop thread waits for another connection's
    /// lock on the file, in all (the opening, and `PersistentCache.withStore`).
    static let busyTimeoutMs = 5000

    /// Runs `body` again while SQLite answers "busy", pausing in between
    /// as `BusyWait` does.
    static func whileBusy<T>(_ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        var wait = BusyWait()
        while true {
            do throws(SQLiteError) {
                return try body()
            } catch {
                guard error.isBusy, wait.pause() else { throw error }
            }
        }
    }

    /// The pauses between attempts at a file whose lock another
    /// connection holds: 1, 2, 4 ... up to 64 ms, `busyTimeoutMs` in all.
    struct BusyWait {
        private var waitedMs = 0
        private var pauseMs = 1

        /// Sleeps before the next attempt; false, without sleeping, once
        /// the time is spent.
        mutating func pause() -> Bool {
            guard waitedMs < PersistentStore.busyTimeoutMs else { return false }
            usleep(UInt32(pauseMs * 1000))
            waitedMs += pauseMs
            pauseMs = min(pauseMs * 2, 64)
            return true
        }
    }

    /// Opens the file, creating it with mode 0600 when missing.
    init(path: String, pendingLimit: Int) throws(CacheOpenFailure) {
        self.pendingLimit = max(pendingLimit, 1)
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
        db.setBusyTimeout(ms: Int32(Self.busyTimeoutMs))
        do throws(SQLiteError) {
            // Switching a new file to WAL takes an exclusive lock, and SQLite
            // answers "busy" at once, without its busy handler, while another
            // process opens the same new file: wait for it here.
            let mode = try Self.whileBusy { () throws(SQLiteError) in try db.texts("PRAGMA journal_mode = WAL") }
            guard mode == ["wal"] else {
                throw SQLiteError(code: 1, message: "journal mode \(mode.first ?? "unknown") instead of wal")
            }
            try db.execute("PRAGMA synchronous = NORMAL; PRAGMA cache_size = -32768")
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
            select = try db.prepare("SELECT rowid, stored_at, expires_at, stale, value, meta FROM entries WHERE key = ?1")
            upsert = try db.prepare("""
                INSERT INTO entries (key, size, stored_at, expires_at, last_access, stale, meta, value)
                VALUES (?1, ?2, ?3, ?4, ?5, 0, ?7, ?6)
                ON CONFLICT (key) DO UPDATE SET size = excluded.size, stored_at = excluded.stored_at,
                    expires_at = excluded.expires_at, last_access = excluded.last_access, stale = 0,
                    meta = excluded.meta, value = excluded.value
                RETURNING rowid
                """)
            touch = try db.prepare("UPDATE entries SET last_access = ?2 WHERE rowid = ?1")
            selectOldest = try db.prepare("SELECT rowid FROM entries ORDER BY last_access LIMIT 1")
            deleteRow = try db.prepare("DELETE FROM entries WHERE rowid = ?1")
            deleteKey = try db.prepare("DELETE FROM entries WHERE key = ?1 RETURNING rowid")
            deleteEvery = try db.prepare("DELETE FROM entries")
            deleteFrom = try db.prepare("DELETE FROM entries WHERE key >= ?1 RETURNING rowid")
            deleteRange = try db.prepare("DELETE FROM entries WHERE key >= ?1 AND key < ?2 RETURNING rowid")
            staleFrom = try db.prepare("UPDATE entries SET stale = 1 WHERE key >= ?1")
            staleRange = try db.prepare("UPDATE entries SET stale = 1 WHERE key >= ?1 AND key < ?2")
            keysFrom = try db.prepare("SELECT key, expires_at FROM entries WHERE key >= ?1 ORDER BY key")
            keysRange = try db.prepare("SELECT key, expires_at FROM entries WHERE key >= ?1 AND key < ?2 ORDER BY key")
            readTotals = try db.prepare("SELECT entries, bytes FROM totals")
            begin = try db.prepare("BEGIN IMMEDIATE")
            commit = try db.prepare("COMMIT")
            rollback = try db.prepare("ROLLBACK")
            accessClock = try db.scalar("SELECT coalesce(max(last_access), 0) FROM entries")
        } catch {
            db.close()
            throw CacheOpenFailure(error, "prepare")
        }
        checkpointer = WALCheckpointer(path: path)
        checkpointer?.attach(to: db)
        // Opened (waiting for other processes above, as opening does on a
        // host thread): from now on SQLite waits for nothing, "busy" comes
        // back at once, and the cache waits, or not on a loop thread,
        // outside its lock (see `PersistentCache.withStore`).
        db.setBusyTimeout(ms: 0)
    }

    deinit {
        close()
    }

    /// Writes the recorded accesses (best effort), ends the checkpoints'
    /// thread (after the checkpoint it runs, if any) and closes the file.
    /// Later calls do nothing.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        try? write { () throws(SQLiteError) in try flushAccesses() }
        if let checkpointer {
            checkpointer.detach(from: db)
            checkpointer.stop()
        }
        db.close()
    }

    /// How many checkpoints the file's thread has run (for tests).
    var backgroundCheckpoints: UInt64 { checkpointer?.checkpoints ?? 0 }

    // MARK: - Reads

    /// The entry under `key` and its rowid, seen in place by `body` (the
    /// view is valid inside it only); nil when there is none. The key is
    /// read in place as well.
    func withEntry<R>(_ key: UnsafeRawBufferPointer,
                      _ body: (_ rowid: Int64, CacheEntryView) -> R) throws(SQLiteError) -> R? {
        defer { select.reset() }
        try select.bind(1, key, copied: false)
        guard try select.step() else { return nil }
        let view = CacheEntryView(value: select.blob(4), storedAtMs: UInt64(clamping: select.int64(1)),
                                  expiresAtMs: UInt64(clamping: select.int64(2)), isStale: select.int64(3) != 0,
                                  meta: select.blob(5))
        return body(select.int64(0), view)
    }

    func totals() throws(SQLiteError) -> (entries: UInt64, bytes: UInt64) {
        defer { readTotals.reset() }
        guard try readTotals.step() else { return (0, 0) }
        return (UInt64(clamping: readTotals.int64(0)), UInt64(clamping: readTotals.int64(1)))
    }

    /// The keys beginning with `prefix` whose entry has not expired at
    /// `nowMs`, in byte order.
    func keys(prefix: [UInt8], liveAt nowMs: UInt64) throws(SQLiteError) -> [[UInt8]] {
        var keys: [[UInt8]] = []
        try forEachLive(prefix: prefix, at: nowMs) { row in
            keys.append(row.bytes(0))
            return true
        }
        return keys
    }

    /// How many entries beginning with `prefix` have not expired at `nowMs`,
    /// up to `limit` (0: no limit); reads no key.
    func countLive(prefix: [UInt8], liveAt nowMs: UInt64, limit: UInt64) throws(SQLiteError) -> UInt64 {
        var count: UInt64 = 0
        try forEachLive(prefix: prefix, at: nowMs) { _ in
            count += 1
            return count != limit
        }
        return count
    }

    /// Calls `body` with the row (key, expires_at) of each entry beginning
    /// with `prefix` that has not expired at `nowMs`, in key order, until it
    /// returns false.
    private func forEachLive(prefix: [UInt8], at nowMs: UInt64,
                             _ body: (SQLiteStatement) -> Bool) throws(SQLiteError) {
        let statement = try bindPrefix(prefix, from: keysFrom, range: keysRange)
        defer { statement.reset() }
        while try statement.step() {
            let expires = UInt64(clamping: statement.int64(1))
            if (expires == 0 || nowMs < expires) && !body(statement) { return }
        }
    }

    func integrityCheck() throws(SQLiteError) -> String {
        try db.texts("PRAGMA integrity_check").joined(separator: "\n")
    }

    /// Records a read of the row as its most recent access, in memory;
    /// writes the recorded accesses when `pendingLimit` rows have one.
    func recordAccess(_ rowid: Int64) {
        accessClock += 1
        pendingAccesses[rowid] = accessClock
        guard pendingAccesses.count >= pendingLimit else { return }
        let accesses = pendingAccesses
        do throws(SQLiteError) {
            try write { () throws(SQLiteError) in try flushAccesses() }
        } catch {
            // The read itself succeeded: it does not fail for this. When
            // another process holds the file the accesses wait for the next
            // flush, up to four times the limit; past it, or on another
            // failure, they are dropped (only the eviction order suffers).
            if error.isBusy && accesses.count < pendingLimit * 4 { pendingAccesses = accesses }
        }
    }

    // MARK: - Writes (call inside `write`)

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

    /// Writes every recorded access, in rowid order. If the transaction
    /// then fails they are lost: only the eviction order suffers.
    func flushAccesses() throws(SQLiteError) {
        let accesses = pendingAccesses.sorted { $0.key < $1.key }
        pendingAccesses = [:]
        for (rowid, access) in accesses {
            try setAccess(rowid, access)
        }
    }

    /// Stores the entry as the most recent one.
    func upsert(_ key: [UInt8], _ value: [UInt8], meta: [UInt8], size: Int, storedAt: UInt64,
                expiresAt: UInt64) throws(SQLiteError) {
        accessClock += 1
        try upsert.bind(1, key)
        try upsert.bind(2, Int64(size))
        try upsert.bind(3, Int64(clamping: storedAt))
        try upsert.bind(4, Int64(clamping: expiresAt))
        try upsert.bind(5, accessClock)
        try upsert.bind(6, value)
        try upsert.bind(7, meta)
        for rowid in try rowids(upsert) { pendingAccesses[rowid] = nil }
    }

    /// Deletes least recently used entries until the keys and values take
    /// at most `maxBytes`; how many.
    func evict(toBytes maxBytes: Int) throws(SQLiteError) -> Int {
        var evicted = 0
        while try totals().bytes > UInt64(maxBytes) {
            let oldest: Int64?
            do {
                defer { selectOldest.reset() }
                oldest = try selectOldest.step() ? selectOldest.int64(0) : nil
            }
            guard let rowid = oldest else { break }
            if let access = pendingAccesses.removeValue(forKey: rowid) {
                try setAccess(rowid, access)
                continue
            }
            try deleteRow.bind(1, rowid)
            evicted += try deleteRow.run()
        }
        return evicted
    }

    @discardableResult
    func delete(_ key: [UInt8]) throws(SQLiteError) -> Int {
        try deleteKey.bind(1, key)
        return try forget(rowids(deleteKey))
    }

    func deleteAll() throws(SQLiteError) {
        try deleteEvery.run()
        pendingAccesses = [:]
    }

    func delete(prefix: [UInt8]) throws(SQLiteError) -> Int {
        let statement = try bindPrefix(prefix, from: deleteFrom, range: deleteRange)
        return try forget(rowids(statement))
    }

    func markStale(prefix: [UInt8]) throws(SQLiteError) -> Int {
        try bindPrefix(prefix, from: staleFrom, range: staleRange).run()
    }

    // MARK: - Helpers

    private func setAccess(_ rowid: Int64, _ access: Int64) throws(SQLiteError) {
        try touch.bind(1, rowid)
        try touch.bind(2, access)
        try touch.run()
    }

    /// Runs a statement that returns rowids; the rowids.
    private func rowids(_ statement: SQLiteStatement) throws(SQLiteError) -> [Int64] {
        defer { statement.reset() }
        var rowids: [Int64] = []
        while try statement.step() { rowids.append(statement.int64(0)) }
        return rowids
    }

    /// Drops the recorded accesses of deleted rows; how many rows.
    private func forget(_ rowids: [Int64]) -> Int {
        for rowid in rowids { pendingAccesses[rowid] = nil }
        return rowids.count
    }

    /// Binds the key range [prefix, the next prefix) to the statement that
    /// fits it, and returns that statement.
    @discardableResult
    private func bindPrefix(_ prefix: [UInt8], from: SQLiteStatement,
                            range: SQLiteStatement) throws(SQLiteError) -> SQLiteStatement {
        guard let end = Self.successor(of: prefix) else {
            try from.bind(1, prefix)
            return from
        }
        try range.bind(1, prefix)
        try range.bind(2, end)
        return range
    }

    /// The smallest byte string above every string that begins with
    /// `prefix`; nil when there is none (the prefix is empty or all 0xFF).
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
