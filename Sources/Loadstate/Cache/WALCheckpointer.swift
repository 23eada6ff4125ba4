import CLibUV
import CSQLite

/// Copies a persistent cache file's write-ahead log into the file
/// (checkpoints it) on a thread of its own, so that a put does not wait
/// for the disk.
///
/// SQLite checkpoints inside the commit that fills the log past 1,000
/// pages, on whichever thread made it: a host's put, or the runtime's loop
/// thread storing a load's value. A checkpoint syncs the log and the file
/// (`synchronous=NORMAL`), and those waits were half the wall time of a
/// run of 10,000 puts of 10 KiB here (2.97 s wall for 1.49 s of CPU; no
/// checkpoint at all gave 1.98 s wall, but a log that grew without
/// bound). With this thread: 1.6-2.0 s.
///
/// Instead, the writer's connection reports each commit's log size to
/// `walHook`: past `startFrames` it wakes this thread, which checkpoints
/// through a connection of its own (PASSIVE: it waits for no reader or
/// writer). A writer that never pauses leaves the thread no moment at
/// which the whole log is copied, and SQLite starts the log over only
/// then; so past `writerFrames` the writer checkpoints itself, as SQLite
/// would have at 1,000, copying what the thread has not (little, so that
/// its syncs have little to write). That bounds the log at about
/// `writerFrames` pages, 16 MiB of 4 KiB pages, and more while the thread
/// finishes a checkpoint (a commit's own checkpoint is then busy): runs of
/// 10,000 puts of 10 KiB peaked at 27 and 31 MiB, of 30,000 puts of 100
/// bytes at 19 and 23 MiB, where SQLite's own checkpoints keep 4 MiB. A
/// thread slowed down (a loaded machine, a slow disk) could let a writer
/// that never pauses grow the log while it finishes one checkpoint, past
/// 64 MiB under AddressSanitizer on a busy machine; so past `waitFrames`
/// a writer whose checkpoint is busy waits for the thread's to end (at
/// most `waitMilliseconds`) and checkpoints then, as SQLite's own
/// checkpoint in the commit would have waited for the disk. The
/// file is not truncated meanwhile (`journal_size_limit` made those runs
/// 20-50% slower); it goes when the cache closes.
///
/// Lifecycle: `init` opens the connection and starts the thread (nil when
/// either fails: the writer then keeps SQLite's own checkpoints); `stop`
/// (any thread, once the writer's hook is removed) ends the thread, after
/// the checkpoint it runs if any, and closes its connection.
final class WALCheckpointer: @unchecked Sendable {
    /// Log pages after a commit that wake the thread (SQLite's own
    /// threshold for checkpointing).
    static let startFrames: Int32 = 1000
    /// Log pages after a commit past which the writer checkpoints itself
    /// (2,000 peaked at 13-19 MiB, but left 10 KiB puts 15% slower).
    static let writerFrames: Int32 = 4000
    /// Log pages after a commit past which a writer whose checkpoint is
    /// busy waits for the thread's checkpoint to end (32 MiB of 4 KiB pages).
    static let waitFrames: Int32 = 8000
    /// The longest a writer waits for the thread's checkpoint.
    static let waitMilliseconds: UInt64 = 2000

    /// The thread's stack.
    static let stackBytes = 256 * 1024

    private let db: OpaquePointer
    private var mutex = uv_mutex_t()
    private var condition = uv_cond_t()
    /// Signalled when the thread ends a checkpoint (guarded by `mutex`).
    private var passEnded = uv_cond_t()
    private var thread = uv_thread_t()
    // Guarded by `mutex`.
    private var wanted = false
    private var stopping = false
    private var passes: UInt64 = 0
    private var checkpointing = false

    init?(path: String) {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK,
              let db else {
            sqlite3_close_v2(db)
            return nil
        }
        self.db = db
        // As the writer's: a checkpoint syncs the log before it and the
        // file after it.
        sqlite3_exec(db, "PRAGMA synchronous = NORMAL", nil, nil, nil)
        guard uv_mutex_init(&mutex) == 0 else {
            sqlite3_close_v2(db)
            return nil
        }
        guard uv_cond_init(&condition) == 0 else {
            uv_mutex_destroy(&mutex)
            sqlite3_close_v2(db)
            return nil
        }
        guard uv_cond_init(&passEnded) == 0 else {
            uv_cond_destroy(&condition)
            uv_mutex_destroy(&mutex)
            sqlite3_close_v2(db)
            return nil
        }
        // The thread holds the checkpointer until it ends (`stop` joins it).
        let context = Unmanaged.passRetained(self).toOpaque()
        // A checkpoint needs little stack; a cache per thread should not
        // reserve the default 8 MiB.
        var options = uv_thread_options_t()
        options.flags = UInt32(UV_THREAD_HAS_STACK_SIZE.rawValue)
        options.stack_size = Self.stackBytes
        let rc = uv_thread_create_ex(&thread, &options, { context in
            guard let context else { return }
            let checkpointer = Unmanaged<WALCheckpointer>.fromOpaque(context).takeRetainedValue()
            checkpointer.run()
        }, context)
        guard rc == 0 else {
            Unmanaged<WALCheckpointer>.fromOpaque(context).release()
            uv_cond_destroy(&passEnded)
            uv_cond_destroy(&condition)
            uv_mutex_destroy(&mutex)
            sqlite3_close_v2(db)
            return nil
        }
    }

    deinit {
        uv_cond_destroy(&passEnded)
        uv_cond_destroy(&condition)
        uv_mutex_destroy(&mutex)
    }

    /// Has the writer's connection report its commits to this checkpointer,
    /// in place of SQLite's own checkpoints. `detach` must come before the
    /// checkpointer is released.
    func attach(to writer: SQLiteDatabase) {
        sqlite3_wal_hook(writer.handle, Self.walHook, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Stops the writer's connection's reports (before `stop`).
    func detach(from writer: SQLiteDatabase) {
        sqlite3_wal_hook(writer.handle, nil, nil)
    }

    /// The writer's connection's hook, with an unretained checkpointer as
    /// its context (`sqlite3_wal_hook`): called after each commit with the
    /// pages in the log.
    private static let walHook: @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafePointer<CChar>?, Int32)
        -> Int32 = { context, db, _, frames in
            guard let context, frames >= startFrames else { return SQLITE_OK }
            let checkpointer = Unmanaged<WALCheckpointer>.fromOpaque(context).takeUnretainedValue()
            if frames >= writerFrames {
                // Busy while the thread checkpoints: the next commit tries
                // again, and the thread is not woken meanwhile, so that it
                // is soon idle; unless the log is past waitFrames.
                let rc = sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
                if rc == SQLITE_BUSY && frames >= waitFrames && checkpointer.waitForCheckpoint() {
                    sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
                }
            } else {
                checkpointer.request()
            }
            return SQLITE_OK
        }

    /// Any thread: asks for a checkpoint; cheap when one is asked for already.
    func request() {
        uv_mutex_lock(&mutex)
        if !wanted {
            wanted = true
            uv_cond_signal(&condition)
        }
        uv_mutex_unlock(&mutex)
    }

    /// Waits until the thread's running checkpoint ends, at most
    /// `waitMilliseconds`; false when none was running (the busy
    /// checkpoint is another connection's) or it did not end in time.
    func waitForCheckpoint() -> Bool {
        uv_mutex_lock(&mutex)
        defer { uv_mutex_unlock(&mutex) }
        guard checkpointing else { return false }
        let deadline = uv_hrtime() &+ Self.waitMilliseconds &* 1_000_000
        while checkpointing {
            let now = uv_hrtime()
            guard now < deadline else { return false }
            _ = uv_cond_timedwait(&passEnded, &mutex, deadline &- now)
        }
        return true
    }

    /// How many checkpoints the thread has run (for tests).
    var checkpoints: UInt64 {
        uv_mutex_lock(&mutex)
        defer { uv_mutex_unlock(&mutex) }
        return passes
    }

    /// Ends the thread and closes its connection; the later calls do nothing.
    func stop() {
        uv_mutex_lock(&mutex)
        let first = !stopping
        stopping = true
        uv_cond_signal(&condition)
        uv_mutex_unlock(&mutex)
        guard first else { return }
        uv_thread_join(&thread)
    }

    private func run() {
        while true {
            uv_mutex_lock(&mutex)
            while !wanted && !stopping { uv_cond_wait(&condition, &mutex) }
            let stop = stopping
            wanted = false
            checkpointing = !stop
            uv_mutex_unlock(&mutex)
            if stop { break }
            sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            uv_mutex_lock(&mutex)
            passes &+= 1
            checkpointing = false
            uv_cond_broadcast(&passEnded)
            uv_mutex_unlock(&mutex)
        }
        sqlite3_close_v2(db)
    }
}
