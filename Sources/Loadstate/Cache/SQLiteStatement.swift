import CSQLite

/// A prepared SQLite statement, reused: bind, step, read, reset.
final class SQLiteStatement {
    private var handle: OpaquePointer?
    private unowned let database: SQLiteDatabase

    init(database: SQLiteDatabase, sql: String) throws(SQLiteError) {
        self.database = database
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v3(database.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw database.error(rc) }
        handle = statement
    }

    func bind(_ index: Int32, _ value: Int64) throws(SQLiteError) {
        let rc = sqlite3_bind_int64(handle, index, value)
        guard rc == SQLITE_OK else { throw database.error(rc) }
    }

    /// Binds a copy of `bytes` as a blob (an empty blob, not NULL, when empty).
    func bind(_ index: Int32, _ bytes: [UInt8]) throws(SQLiteError) {
        try bytes.withUnsafeBytes { raw in Result { () throws(SQLiteError) in try bind(index, raw, copied: true) } }.get()
    }

    /// Binds `bytes` as a blob (an empty blob, not NULL, when empty). Not
    /// `copied`, SQLite reads them in place: they must stay valid until the
    /// statement is reset (`reset` also clears the bindings).
    func bind(_ index: Int32, _ bytes: UnsafeRawBufferPointer, copied: Bool) throws(SQLiteError) {
        let rc: Int32
        if bytes.isEmpty {
            rc = sqlite3_bind_zeroblob(handle, index, 0)
        } else if bytes.count > Int(Int32.max) {
            rc = SQLITE_TOOBIG
        } else if copied {
            rc = lds_sqlite_bind_blob_copy(handle, index, bytes.baseAddress, Int32(bytes.count))
        } else {
            rc = sqlite3_bind_blob(handle, index, bytes.baseAddress, Int32(bytes.count), nil)
        }
        guard rc == SQLITE_OK else { throw database.error(rc) }
    }

    /// One step: true when a row is ready to read, false when done.
    func step() throws(SQLiteError) -> Bool {
        let rc = sqlite3_step(handle)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        throw database.error(rc)
    }

    /// Runs the statement to its end and resets it; the rows it changed.
    @discardableResult
    func run() throws(SQLiteError) -> Int {
        defer { reset() }
        while try step() {}
        return database.changes
    }

    /// Ready for new bindings and a new run.
    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    func int64(_ column: Int32) -> Int64 {
        sqlite3_column_int64(handle, column)
    }

    func bytes(_ column: Int32) -> [UInt8] {
        [UInt8](blob(column))
    }

    /// The column's bytes in SQLite's memory, valid until the next step or
    /// reset of the statement (an empty buffer for an empty blob or NULL).
    func blob(_ column: Int32) -> UnsafeRawBufferPointer {
        guard let pointer = sqlite3_column_blob(handle, column) else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: pointer, count: Int(max(sqlite3_column_bytes(handle, column), 0)))
    }

    func text(_ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(handle, column) else { return "" }
        return String(cString: pointer)
    }

    func finalize() {
        sqlite3_finalize(handle)
        handle = nil
    }
}
