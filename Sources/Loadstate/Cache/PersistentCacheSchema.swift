import CSQLite

/// Why a cache file could not be opened: it is damaged (not a database,
/// another schema), or the open failed for another reason.
enum CacheOpenFailure: Error {
    case damaged(String)
    case failed(ResultCode, String)

    /// The failure as a `CacheError` naming the file.
    func error(path: String) -> CacheError {
        switch self {
        case .damaged(let reason): return CacheError(.io, "cache file \(path): \(reason)")
        case .failed(let code, let reason): return CacheError(code, "cache file \(path): \(reason)")
        }
    }

    init(_ error: SQLiteError, _ what: String) {
        self = error.isDamage ? .damaged("not a database or damaged (\(error.message))")
                              : .failed(ResultCode(sqlite: error.code), "\(what): \(error.message)")
    }
}

/// The layout of a persistent cache file.
///
/// `entries` holds one row per key; `last_access` is an access counter
/// (higher is more recent) for LRU eviction. `totals` holds the number of
/// entries and their bytes, kept by triggers in the same transaction as
/// every change. The value is the last column so that the metadata of a
/// row is read without its value's overflow pages. `meta` holds what the
/// loader keeps beside a value (`CacheEntry.meta`); it counts in `size`.
///
/// Versions: 1 had no `meta` column. A version 1 file is upgraded in place
/// when it is opened (the column is added, empty for its rows: they keep
/// working, with no validators); the library before version 2 reads a
/// version 2 file as another schema (damaged, see `LDS_CACHE_REPLACE_DAMAGED`).
enum PersistentCacheSchema {
    /// `PRAGMA user_version` of the files this library writes.
    static let version: Int64 = 2

    static let create = """
        CREATE TABLE entries (
            key BLOB NOT NULL PRIMARY KEY,
            size INTEGER NOT NULL,
            stored_at INTEGER NOT NULL,
            expires_at INTEGER NOT NULL,
            last_access INTEGER NOT NULL,
            stale INTEGER NOT NULL,
            meta BLOB NOT NULL DEFAULT x'',
            value BLOB NOT NULL
        );
        CREATE INDEX entries_by_access ON entries (last_access);
        CREATE TABLE totals (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            entries INTEGER NOT NULL,
            bytes INTEGER NOT NULL
        );
        INSERT INTO totals VALUES (1, 0, 0);
        CREATE TRIGGER entries_inserted AFTER INSERT ON entries BEGIN
            UPDATE totals SET entries = entries + 1, bytes = bytes + new.size;
        END;
        CREATE TRIGGER entries_deleted AFTER DELETE ON entries BEGIN
            UPDATE totals SET entries = entries - 1, bytes = bytes - old.size;
        END;
        CREATE TRIGGER entries_resized AFTER UPDATE OF size ON entries BEGIN
            UPDATE totals SET bytes = bytes - old.size + new.size;
        END;
        PRAGMA user_version = \(version);
        """

    /// Turns a version 1 file into a version 2 one (inside `prepare`'s transaction).
    static let upgradeFrom1 = """
        ALTER TABLE entries ADD COLUMN meta BLOB NOT NULL DEFAULT x'';
        PRAGMA user_version = \(version);
        """

    /// Creates the schema in an empty database, or checks the version of
    /// an existing one, in one transaction.
    static func prepare(_ db: SQLiteDatabase) throws(CacheOpenFailure) {
        do throws(SQLiteError) {
            try db.execute("BEGIN IMMEDIATE")
        } catch {
            throw CacheOpenFailure(error, "begin")
        }
        do throws(CacheOpenFailure) {
            try check(db)
            do throws(SQLiteError) { try db.execute("COMMIT") } catch { throw CacheOpenFailure(error, "commit") }
        } catch {
            try? db.execute("ROLLBACK")
            throw error
        }
    }

    private static func check(_ db: SQLiteDatabase) throws(CacheOpenFailure) {
        let version: Int64
        let tables: Int64
        do throws(SQLiteError) {
            version = try db.scalar("PRAGMA user_version")
            tables = try db.scalar("SELECT count(*) FROM sqlite_schema")
        } catch {
            throw CacheOpenFailure(error, "read schema")
        }
        if version == 0 && tables == 0 {
            do throws(SQLiteError) { try db.execute(create) } catch { throw CacheOpenFailure(error, "create schema") }
            return
        }
        if version == 0 {
            throw .damaged("not a loadstate cache (a database without a schema version)")
        }
        if version == 1 {
            do throws(SQLiteError) { try db.execute(upgradeFrom1) } catch {
                throw CacheOpenFailure(error, "upgrade schema")
            }
            return
        }
        if version != Self.version {
            throw .damaged("schema version \(version), this library reads version \(Self.version)")
        }
    }
}

extension ResultCode {
    /// The code for a failed SQLite call.
    init(sqlite code: Int32) {
        switch code & 0xFF {
        case SQLITE_NOMEM: self = .outOfMemory
        case SQLITE_TOOBIG: self = .tooBig
        default: self = .io
        }
    }
}
