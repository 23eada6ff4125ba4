import CLibUV
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One libuv loop (never the default loop) running on one dedicated thread.
///
/// Lifecycle: `init` creates the loop and starts the thread; `execute` runs
/// closures on the loop thread from any thread; `stop` runs a last closure
/// there, closes every handle and joins the thread. After `stop` returns the
/// loop is gone and `execute` does nothing. On the loop thread itself,
/// `stopFromLoopThread` runs the last closure at once and ends the loop the
/// same way without a join: the thread, detached, frees the loop when it
/// ends. Once the last closure ran, work still queued is dropped.
///
/// `stop` is bounded: it waits for `Lingering` work (commands being
/// killed) and for requests out in libuv's thread pool (file operations)
/// at most `stopDeadlineMs`. A request still out then is abandoned: the
/// loop is kept, never closed or freed, so that the worker that finishes
/// it later writes to live memory; its completion never runs. So whoever
/// issues a thread-pool request keeps its memory until the completion
/// runs, never freeing it otherwise (`FileRead` holds itself, and with it
/// the request, until then).
///
/// Work sent with `execute` (and Swift jobs sent to the loop as a
/// `SerialExecutor`) is queued and the loop is woken with `uv_async_send`;
/// since sends coalesce, each wake-up drains the whole queue, including
/// work queued while draining.
@usableFromInline package final class EventLoop: @unchecked Sendable {
    /// The libuv loop. Use it on the loop thread only.
    @usableFromInline package let loop: UnsafeMutablePointer<uv_loop_t>
    private let wakeup: UnsafeMutablePointer<uv_async_t>
    /// Set by a stop that drops the commands queued before it.
    private let droppingCommands = Atomic<Bool>(false)
    private let queue = WorkQueue()
    private var thread = pthread_t()
    private var running = true
    private var finalWork: (() -> Void)?
    /// How long, in ns, the loop thread polls its queue for more work,
    /// within one wake-up, before it goes back to sleep.
    private let spinNs: UInt64
    /// Loop thread only: whether `drain` is running a work item, and the
    /// work that item asked to run once it returns (see `afterCurrent`).
    /// Touched by every load: no dynamic exclusivity checks (see `Cell`).
    @exclusivity(unchecked) private var inItem = false
    @exclusivity(unchecked) private var followUps: [() -> Void] = []
    /// Loop thread only: what runs once the current batch of work items is
    /// done (see `afterBatch`).
    @exclusivity(unchecked) private var batchEnds: [() -> Void] = []
    /// Loop thread only: the lingering work, and the handles `stop` leaves
    /// open to it.
    private var lingering: [ObjectIdentifier: (work: any Lingering, handle: UnsafeMutableRawPointer)] = [:]
    private var kept: Set<UnsafeMutableRawPointer> = []
    /// The timer that bounds `stop`; set on the loop thread during `stop`.
    private var deadline: UnsafeMutablePointer<uv_timer_t>?
    /// Set by the loop thread when it gave up on thread-pool requests.
    private var abandoned = false
    /// Set on the loop thread by `stopFromLoopThread`: nobody joins the
    /// thread, which frees the loop when it ends.
    private var freedByLoopThread = false

    /// The longest `stop` waits for lingering work and thread-pool
    /// requests, in milliseconds.
    @usableFromInline package static let stopDeadlineMs: UInt64 = 1000

    /// Loops given up by `stop` with requests still out in the thread pool.
    /// Their addresses are kept here so that their memory stays reachable.
    private static let abandonedLoops = Locked<[UInt]>([])

    /// Creates the loop and starts its thread. `spinMicroseconds`: how long
    /// the loop thread keeps polling for more work, in total per wake-up,
    /// once it runs out; work sent meanwhile needs no wake-up system call.
    @usableFromInline package init(spinMicroseconds: UInt32 = 0) throws(ResultCode) {
        spinNs = UInt64(spinMicroseconds) * 1000
        loop = .allocate(capacity: 1)
        wakeup = .allocate(capacity: 1)
        guard uv_loop_init(loop) == 0 else {
            loop.deallocate()
            wakeup.deallocate()
            throw .outOfMemory
        }
        wakeup.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_async_init(loop, wakeup) { handle in
            let me = Unmanaged<EventLoop>.fromOpaque(handle!.pointee.data).takeUnretainedValue()
            me.drain()
        }
        let box = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(&thread, nil, { arg in
            let me = Unmanaged<EventLoop>.fromOpaque(arg!).takeRetainedValue()
            me.run()
            return nil
        }, box)
        guard rc == 0 else {
            Unmanaged<EventLoop>.fromOpaque(box).release()
            uv_close(UnsafeMutableRawPointer(wakeup).assumingMemoryBound(to: uv_handle_t.self), nil)
            uv_run(loop, UV_RUN_DEFAULT)
            uv_loop_close(loop)
            loop.deallocate()
            wakeup.deallocate()
            throw .outOfMemory
        }
    }

    /// Whether the calling thread is the loop thread.
    @usableFromInline package var isLoopThread: Bool {
        pthread_equal(pthread_self(), thread) != 0
    }

    /// Runs `body` on the loop thread, after the work queued before it.
    /// Never runs it synchronously, even when called on the loop thread.
    @usableFromInline package func execute(_ body: @escaping () -> Void) {
        if queue.push(.command(body)) {
            uv_async_send(wakeup)
        }
    }

    /// `execute` for work that a stop may drop before it runs (`stop`'s
    /// `dropQueued`): a host's load, cancel or set of a cell, which the
    /// shutdown makes moot, and whose skipping leaves nothing to release.
    @usableFromInline package func executeSkippable(_ body: @escaping () -> Void) {
        if queue.push(.skippable(body)) {
            uv_async_send(wakeup)
        }
    }

    /// How many operations wait in the loop's queue (a hint, see `WorkQueue.count`).
    @usableFromInline package var queuedCount: Int { queue.count }

    /// Whether the calling thread runs a runtime's loop (any runtime's),
    /// where nothing may wait: for code that does not know its runtime,
    /// such as a cache file shared by several.
    static var isCurrentThreadALoop: Bool {
        get { lds_loop_thread_flag().pointee != 0 }
        set { lds_loop_thread_flag().pointee = newValue ? 1 : 0 }
    }

    /// Loop thread: whether a work item (or a follow-up of one) runs now,
    /// so that `afterCurrent` and `afterBatch` run a body after it without
    /// a wake-up.
    var isInWorkItem: Bool { inItem }

    /// Loop thread, inside a work item (`isInWorkItem`): runs `body` once
    /// every work item the loop took with this one has run, before it
    /// takes more or waits (for work that gathers what many items did,
    /// such as the writes of the Redis commands they sent). Elsewhere like
    /// `afterCurrent`.
    func afterBatch(_ body: @escaping () -> Void) {
        if isLoopThread && inItem {
            batchEnds.append(body)
        } else {
            afterCurrent(body)
        }
    }

    /// Runs `body` on the loop thread: right after the work item running
    /// now when called from one (cheaper than `execute`: no queue, no
    /// lock), else like `execute`. For work that must not run inside its
    /// caller but may run before work queued by other threads.
    @usableFromInline package func afterCurrent(_ body: @escaping () -> Void) {
        // The thread first: `inItem` is the loop thread's alone.
        if isLoopThread && inItem {
            followUps.append(body)
        } else {
            execute(body)
        }
    }

    /// Runs `last` on the loop thread, then closes every handle on the loop
    /// and joins the thread. Must not be called on the loop thread.
    ///
    /// Lingering work is told to stop, and the loop runs until it is gone
    /// and libuv's thread pool holds no request of the loop, or until
    /// `stopDeadlineMs` has passed; then whatever is left is closed (or, for
    /// thread-pool requests, abandoned; see the type's comment).
    /// `dropQueued`: the skippable commands queued before the stop and not
    /// yet run (see `executeSkippable`) are dropped instead of run, so that
    /// a stop does not wait behind a backlog of work the shutdown makes
    /// moot. Only for a caller that knows no thread waits for one of them.
    @usableFromInline package func stop(dropQueued: Bool = false, last: @escaping () -> Void) {
        precondition(!isLoopThread, "EventLoop.stop on its own thread")
        if dropQueued { droppingCommands.store(true, ordering: .releasing) }
        if queue.push(.stop { [self] in
            last()
            beginStopping()
        }) {
            uv_async_send(wakeup)
        }
        pthread_join(thread, nil)
        release()
    }

    /// `stop` for the loop thread: runs `last` now, then ends the loop as
    /// `stop` does, without waiting. The thread is detached; when its loop
    /// has ended (lingering work gone, or `stopDeadlineMs` passed) it frees
    /// the loop itself. Work queued before or after is dropped, never run.
    @usableFromInline package func stopFromLoopThread(last: () -> Void) {
        precondition(isLoopThread, "EventLoop.stopFromLoopThread off its thread")
        last()
        beginStopping()
        queue.close()
        freedByLoopThread = true
        pthread_detach(thread)
    }

    /// Loop thread, after the last closure of a stop: no more work runs;
    /// lingering work is told to stop, and the handles it does not keep are
    /// closed.
    private func beginStopping() {
        running = false
        for entry in Array(lingering.values) { entry.work.loopStopping() }
        closeHandles(sparingKept: true)
        startDeadline()
    }

    /// Once the loop thread has ended: frees the loop (or keeps it, when
    /// thread-pool requests are still out).
    private func release() {
        // Work queued too late to run is released, and later work dropped.
        queue.close()
        if abandoned {
            EventLoop.abandonedLoops.withLock { $0.append(UInt(bitPattern: loop)) }
        } else {
            uv_loop_close(loop)
            loop.deallocate()
        }
        wakeup.deallocate()
        deadline?.deallocate()
    }

    /// Loop thread: `work` must end before `stop` closes the loop, and
    /// `stop` leaves `handle` open to it.
    func addLingering(_ work: any Lingering, keeping handle: UnsafeMutableRawPointer) {
        lingering[ObjectIdentifier(work)] = (work, handle)
        kept.insert(handle)
    }

    /// Loop thread: `work` has closed all its handles.
    func removeLingering(_ work: any Lingering) {
        guard let entry = lingering.removeValue(forKey: ObjectIdentifier(work)) else { return }
        kept.remove(entry.handle)
    }

    private func run() {
        EventLoop.isCurrentThreadALoop = true
        uv_run(loop, UV_RUN_DEFAULT)
        // The loop ended or the stop deadline passed. Lingering work still
        // there is dropped as at the deadline: the loop can end before it,
        // when the handles left to that work stop watching, and the work
        // would otherwise never leave (a Redis connection waiting to be
        // told it is closed holds this loop, which holds it: both leaked).
        for entry in Array(lingering.values) { entry.work.loopDeadline() }
        lingering.removeAll()
        // Close what is left (the deadline timer at least) and run the
        // close callbacks; requests out in the thread pool are not waited for.
        while handleCount() > 0 {
            closeHandles(sparingKept: false)
            uv_run(loop, UV_RUN_NOWAIT)
        }
        abandoned = uv_loop_alive(loop) != 0
        if freedByLoopThread { release() }
    }

    private static func from(_ data: UnsafeMutableRawPointer?) -> EventLoop {
        Unmanaged<EventLoop>.fromOpaque(data!).takeUnretainedValue()
    }

    /// Closes every handle not yet closing, except, when `sparingKept`,
    /// those left to lingering work.
    private func closeHandles(sparingKept: Bool) {
        if !sparingKept { kept.removeAll() }
        uv_walk(loop, { handle, arg in
            let me = EventLoop.from(arg)
            guard let handle, uv_is_closing(handle) == 0, !me.kept.contains(UnsafeMutableRawPointer(handle)) else {
                return
            }
            uv_close(handle, nil)
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    private func handleCount() -> Int {
        var count = 0
        uv_walk(loop, { _, arg in
            arg!.assumingMemoryBound(to: Int.self).pointee += 1
        }, &count)
        return count
    }

    /// Arms the timer that ends the wait of `stop`. It does not keep the
    /// loop alive: the loop ends earlier when nothing else is left.
    private func startDeadline() {
        let timer = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
        deadline = timer
        uv_timer_init(loop, timer)
        timer.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_timer_start(timer, { handle in
            let me = EventLoop.from(handle!.pointee.data)
            for entry in Array(me.lingering.values) { entry.work.loopDeadline() }
            uv_stop(me.loop)
        }, EventLoop.stopDeadlineMs, 0)
        uv_unref(UnsafeMutableRawPointer(timer).assumingMemoryBound(to: uv_handle_t.self))
    }

    private func drain() {
        var spinLeft = spinNs
        while running {
            var batch = queue.takeAll(stayAwake: spinLeft > 0)
            if batch.isEmpty {
                guard spinLeft > 0 else { return }
                batch = spin(&spinLeft)
                if batch.isEmpty { return }
            }
            // An item may stop the loop (see `stopFromLoopThread`): the
            // items after it are dropped, as work queued too late is.
            for item in batch where running {
                inItem = true
                switch item {
                case .command(let body):
                    body()
                case .skippable(let body):
                    if !droppingCommands.load(ordering: .relaxed) { body() }
                case .stop(let body):
                    body()
                case .job(let job):
                    job.runSynchronously(on: asUnownedSerialExecutor())
                }
                inItem = false
                runFollowUps()
            }
            queue.recycle(batch)
            runBatchEnds()
        }
    }

    private func runFollowUps() {
        var i = 0
        // After the last item of `stop` nothing runs, as with queued work.
        while running && i < followUps.count {
            // A follow-up may ask for more; they run in order.
            inItem = true
            followUps[i]()
            inItem = false
            i += 1
        }
        // Most items schedule none; emptying an empty array still costs a call.
        if !followUps.isEmpty { followUps.removeAll(keepingCapacity: true) }
    }

    private func runBatchEnds() {
        var i = 0
        while running && i < batchEnds.count {
            // Like a work item: what it schedules runs after it.
            inItem = true
            batchEnds[i]()
            inItem = false
            runFollowUps()
            i += 1
        }
        if !batchEnds.isEmpty { batchEnds.removeAll(keepingCapacity: true) }
    }

    /// Polls the queue until work comes or `budget` ns have passed (the
    /// time spent is taken from it); then, with nothing found, lets the
    /// next push wake the loop again. The work found, or [].
    private func spin(_ budget: inout UInt64) -> [WorkItem] {
        let start = Clock.monotonicNs()
        defer { budget -= min(budget, Clock.monotonicNs() - start) }
        while Clock.monotonicNs() - start < budget {
            for _ in 0..<32 where !queue.mayHaveItems { lds_cpu_relax() }
            if queue.mayHaveItems {
                let batch = queue.takeAll(stayAwake: true)
                if !batch.isEmpty { return batch }
            }
        }
        return queue.takeAll()
    }
}

extension EventLoop: SerialExecutor {
    @usableFromInline package func enqueue(_ job: consuming ExecutorJob) {
        if queue.push(.job(UnownedJob(job))) {
            uv_async_send(wakeup)
        }
    }

    @usableFromInline package func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    @usableFromInline package func checkIsolated() {
        precondition(isLoopThread, "not on the loadstate loop thread")
    }
}
