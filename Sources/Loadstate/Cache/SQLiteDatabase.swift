import CSQLite

/// A failed SQLite call: its result code and SQLite's message.
struct SQLiteError: Error {
    var code: Int32
    var message: String

    /// Whether another connection holds a lock the call needed.
    var isBusy: Bool {
        let primary = code & 0xFF
        return primary == SQLITE_BUSY || primary == SQLITE_LOCKED
    }

    /// Whether the file is not a database or is damaged.
    var isDamage: Bool {
        let primary = code & 0xFF
        return primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT
    }
}

/// One SQLite connection: the adapter between the persistent cache and
/// SQLite's C API. Opened without SQLite's own mutex; its owner
/// serializes every call (and every use of its statements).
final class SQLiteDatabase {
    let handle: OpaquePointer
    private var statements: [SQLiteStatement] = []
    private var isClosed = false

    /// Opens an existing file read-write.
    init(path: String) throws(SQLiteError) {
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            sqlite3_close_v2(db)
            throw SQLiteError(code: rc, message: message)
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
    }

    deinit {
        close()
    }

    /// The error of the last failed call, with result code `rc`.
    func error(_ rc: Int32) -> SQLiteError {
        SQLiteError(code: rc, message: String(cString: sqlite3_errmsg(handle)))
    }

    /// Runs SQL without results (several statements allowed).
    func execute(_ sql: String) throws(SQLiteError) {
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw error(rc) }
    }

    /// A statement kept for the life of the connection.
    func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        let statement = try SQLiteStatement(database: self, sql: sql)
        statements.append(statement)
        return statement
    }

    /// The first column of the first row of a one-off query (0 without rows).
    func scalar(_ sql: String) throws(SQLiteError) -> Int64 {
        let statement = try SQLiteStatement(database: self, sql: sql)
        defer { statement.finalize() }
        guard try statement.step() else { return 0 }
        return statement.int64(0)
    }

    /// The first column of every row of a one-off query, as text.
    func texts(_ sql: String) throws(SQLiteError) -> [String] {
        let statement = try SQLiteStatement(database: self, sql: sql)
        defer { statement.finalize() }
        var rows: [String] = []
        while try statement.step() { rows.append(statement.text(0)) }
        return rows
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE (not counting triggers).
    var changes: Int {
        Int(sqlite3_changes64(handle))
    }

    func setBusyTimeout(ms: Int32) {
        sqlite3_busy_timeout(handle, ms)
    }

    /// Finalizes the statements and closes the file. Idempotent.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        for statement in statements { statement.finalize() }
        statements = []
        sqlite3_close_v2(handle)
    }
}
