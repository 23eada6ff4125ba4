import Synchronization

/// A loadstate runtime: one event loop on its own thread, the table of its
/// cells, loaders and jobs, and the delivery of host callbacks.
///
/// Lifecycle: `init` starts the loop; any thread may use the runtime;
/// `close` cancels every job, releases every loader, stops the loop and
/// joins its thread. Work that arrives after `close` began is refused with
/// `ResultCode.closed` by the callers that check `isClosed`.
///
/// A runtime released without `close` closes itself when its last
/// reference goes (cells, loaders and jobs reach it unowned, so they never
/// keep it alive, and it must not go while its loop runs them):
/// - on any thread but its loop thread, as `close` does, joining the loop
///   thread (at most `EventLoop.stopDeadlineMs` for commands and file
///   operations still running). A thread inside a dispatch, where `close`
///   refuses, is one of them: the loop never waits for it, and the
///   cleanups left run inside that dispatch;
/// - on its loop thread (the last reference was held by work running
///   there), the shutdown runs at once; the loop thread, which cannot join
///   itself, is detached and ends by itself, freeing the loop; work queued
///   for the loop then is dropped. Nothing waits, and nothing is left
///   running. In `DeliveryMode.poll`, cleanups still queued for
///   `lds_runtime_dispatch` run there, on the loop thread.
public final class Runtime: @unchecked Sendable {
    @usableFromInline package let loop: EventLoop
    @usableFromInline package let delivery: Delivery
    @usableFromInline package let table = HandleTable()
    /// Loop thread only: the runtime-wide observer (see `RuntimeObserver`).
    @exclusivity(unchecked) var observer: RuntimeObserver?
    /// Loop thread only: the inspector serving, if any (see `Runtime+Inspector.swift`).
    @exclusivity(unchecked) var inspector: Inspector?
    /// Load, job and event counters (see `Runtime+Metrics.swift`).
    @usableFromInline package let metrics: RuntimeMetrics
    /// The memory caches, found without the table's lock by `lds_cache_get`.
    @usableFromInline package let memoryCaches = PinnedHandles<MemoryCache>()
    private let closed = Atomic<Bool>(false)
    /// Loop thread only: the running jobs that loads may share, by key.
    private var shared: [ShareKey: Handle] = [:]
    /// Loop thread only: whether polling is paused, and who waits for it.
    let pollControl = PollControl()
    /// Loop thread: the keys that show optimistic values of running writes.
    let optimisticLedger = OptimisticLedger()
    /// Online and foreground, as the host set them (see `HostSignals.swift`).
    let hostSignals = HostSignals()

    /// `spinMicroseconds`: see `EventLoop.init`. `metrics`: whether loads,
    /// jobs and events are counted and load latencies measured (see
    /// `statistics()`); off, they cost nothing and the counters stay 0.
    public init(delivery mode: DeliveryMode = .loop, spinMicroseconds: UInt32 = 0,
                queueLimit: Int = Runtime.defaultQueueLimit, metrics: Bool = true) throws(ResultCode) {
        self.queueLimit = queueLimit
        delivery = try Delivery(mode: mode)
        loop = try EventLoop(spinMicroseconds: spinMicroseconds)
        // Last: a failed init runs no deinit, which frees the counters.
        self.metrics = RuntimeMetrics(enabled: metrics)
    }

    deinit {
        if closed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged {
            if loop.isLoopThread {
                loop.stopFromLoopThread { shutDownOnLoop() }
                delivery.drainCleanups()
            } else {
                stopLoop()
            }
        }
        metrics.deallocate()
    }

    /// Whether `close` was called.
    public var isClosed: Bool { closed.load(ordering: .acquiring) }

    /// The most operations from host threads that wait for the loop thread:
    /// in its queue, or in the inbox of one job. A call that would queue
    /// more is refused with `ResultCode.again`. Operations the loop thread
    /// makes itself are never refused. Each thread calling at the same time
    /// may pass the check once more than the limit.
    public let queueLimit: Int

    /// The default `queueLimit` (`LDS_QUEUE_MAX`).
    public static let defaultQueueLimit = 262_144

    /// Whether a call from a host thread may queue work for the loop now.
    @inline(__always)
    @usableFromInline package var acceptsQueuedWork: Bool { loop.queuedCount < queueLimit }

    /// Runs a host callback on the delivery thread. Call on the loop thread.
    @usableFromInline package func deliver(_ kind: Delivery.Kind, _ body: @escaping () -> Void) {
        if delivery.mode == .loop {
            body()
        } else {
            delivery.post(kind, body)
        }
    }

    /// Cancels every job (cancel callbacks run), releases every loader and
    /// stops the loop, waiting for running commands and thread-pool work at
    /// most `EventLoop.stopDeadlineMs` (see `EventLoop.stop`). Returns
    /// `.closed` when already closed, and `.wrongState` on the loop thread
    /// or inside a dispatch, where it could not wait for the loop: it then
    /// does nothing, and the runtime stays open until it is closed from
    /// another thread or released (see the type's comment).
    public func close() -> ResultCode {
        close(droppingQueuedWork: false)
    }

    /// `close`; `droppingQueuedWork`: the hosts' loads, cancels and sets of
    /// cells still queued for the loop are dropped rather than run first (the C API's free, once no call is in flight: a backlog
    /// the shutdown makes moot would otherwise hold the free for as long as
    /// it takes to run).
    @_spi(LoadstateC) public func close(droppingQueuedWork: Bool) -> ResultCode {
        if loop.isLoopThread || delivery.isDispatchThread { return .wrongState }
        guard closed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
            return .closed
        }
        stopLoop(droppingQueuedWork: droppingQueuedWork)
        return .ok
    }

    /// Off the loop thread: shuts down on the loop, joins it, then runs the
    /// cleanups left. The closure does not retain the runtime (it may be
    /// called from `deinit`); `stop` returns only once it ran.
    private func stopLoop(droppingQueuedWork: Bool = false) {
        loop.stop(dropQueued: droppingQueuedWork) { [unowned(unsafe) self] in shutDownOnLoop() }
        delivery.drainCleanups()
    }

    /// Loop thread, last: stops the inspector, shuts down every cell, then
    /// every loader, and detaches the observer.
    private func shutDownOnLoop() {
        inspector?.stop()
        inspector = nil
        let handles = table.all()
        for stage in ShutdownStage.allCases {
            for handle in handles where handle.shutdownStage == stage {
                handle.shutdown(runtime: self)
            }
        }
        table.withLock { $0.handles.removeAll() }
        let last = observer
        observer = nil
        last?.detached()
    }

    // MARK: - Jobs (any thread)

    /// Queues an operation of a running job. Returns `.cancelled` when the
    /// job no longer runs, `.notFound` when `id` never named such a job.
    @discardableResult
    @_specialize(exported: true, where Value == [UInt8], Request == [UInt8])
    @_spi(LoadstateC) public func submit<Value, Request>(_ op: JobOperation<Value>, job id: UInt64,
                                       of type: Job<Value, Request>.Type) -> ResultCode {
        var scheduled: Job<Value, Request>?
        let onLoop = loop.isLoopThread
        let rc = table.withLock { storage in
            accept(op, job: id, of: type, in: &storage, onLoop: onLoop, scheduling: &scheduled)
        }
        if let job = scheduled { schedule(job, onLoop: onLoop) }
        return rc
    }

    /// Queues operations of running jobs, each as `submit(_:job:of:)`
    /// would, under one acquisition of the table lock; off the loop thread
    /// the jobs they give work to are settled in one work item of the loop
    /// (a host that ends jobs in batches hands the loop one item, not one
    /// per job). `results[i]` is the code of `ops[i]`.
    @_specialize(exported: true, where Value == [UInt8], Request == [UInt8])
    @_spi(LoadstateC) public func submit<Value, Request>(_ ops: [(job: UInt64, op: JobOperation<Value>)],
                                       of type: Job<Value, Request>.Type) -> [ResultCode] {
        let onLoop = loop.isLoopThread
        var scheduled: [Job<Value, Request>] = []
        let results = table.withLock { storage in
            ops.map { item -> ResultCode in
                var job: Job<Value, Request>?
                let rc = accept(item.op, job: item.job, of: type, in: &storage, onLoop: onLoop, scheduling: &job)
                if let job { scheduled.append(job) }
                return rc
            }
        }
        if onLoop || scheduled.count <= 1 {
            for job in scheduled { schedule(job, onLoop: onLoop) }
        } else {
            loop.execute {
                scheduled.withUnsafeBufferPointer { jobs in
                    for index in jobs.indices { jobs[index].settle() }
                }
            }
        }
        return results
    }

    /// Under the table lock: accepts `op` for the job `id`, and sets
    /// `scheduling` to the job when the loop must now settle it.
    @inline(__always)
    private func accept<Value, Request>(_ op: JobOperation<Value>, job id: UInt64, of type: Job<Value, Request>.Type,
                                        in storage: inout HandleTable.Storage, onLoop: Bool,
                                        scheduling: inout Job<Value, Request>?) -> ResultCode {
        guard let handle = storage.handles[id] else {
            return table.wasIssued(id, as: .job) ? .cancelled : .notFound
        }
        guard let job = handle as? Job<Value, Request> else { return .notFound }
        guard job.phase == .running else { return .cancelled }
        if !onLoop && job.inbox.count >= queueLimit { return .again }
        if op.isTerminal {
            job.phase = .ending
            storage.handles[id] = nil
        }
        // The loader's spare storage is the loop thread's alone.
        if onLoop { job.inbox.reuse(&job.loader.spareInbox) }
        job.inbox.append(op)
        job.accepted += 1
        if !job.drainScheduled {
            job.drainScheduled = true
            scheduling = job
        }
        return .ok
    }

    /// Has the loop settle `job`, which was given work.
    private func schedule<Value, Request>(_ job: Job<Value, Request>, onLoop: Bool) {
        if onLoop && job.isStarting {
            // From inside the loader's `start` (a job completed at
            // once): applied as soon as `start` returns.
            job.settleAfterStart = true
        } else {
            // A closure made here, where the job's types are known,
            // keeps the loop's side of the work specialized for them.
            loop.afterCurrent { job.settle() }
        }
    }

    // MARK: - Caches

    /// Marks the entries of `store` under `prefix` stale, then (on the loop)
    /// has every cell showing one of them reload it.
    @usableFromInline package func invalidate(_ store: any CacheStore, prefix: [UInt8]) throws(CacheError) {
        if let redis = store as? RedisCache, loop.isLoopThread {
            // The loop cannot wait for Redis: the cells reload once it answered.
            redis.markStaleFromLoop(prefix: prefix) { [self] in notifyInvalidated(store, prefix: prefix) }
            return
        }
        try store.markStale(prefix: prefix)
        loop.execute { [self] in notifyInvalidated(store, prefix: prefix) }
    }

    /// Loop: invalidates as `invalidate` does, but the cells showing the
    /// entries begin their reloads now, not on a later turn of the loop: a
    /// write's invalidations happen before its cell reports FINISHED, so a
    /// host call made after that event finds the reloads under way. A Redis
    /// cache still notifies the cells once Redis answered.
    func invalidateNow(_ store: any CacheStore, prefix: [UInt8]) throws(CacheError) {
        if store is RedisCache { return try invalidate(store, prefix: prefix) }
        try store.markStale(prefix: prefix)
        notifyInvalidated(store, prefix: prefix)
    }

    /// Loop: every cell showing an entry of `store` under `prefix` reloads
    /// it (the entries were invalidated here or, for a shared cache, by
    /// another process).
    func notifyInvalidated(_ store: AnyObject, prefix: [UInt8]) {
        for case let viewer as CacheViewer in table.all() {
            viewer.cacheInvalidated(store, prefix: prefix)
        }
    }

    // MARK: - Shared jobs (loop thread)

    /// The running job loads with this key share, if any.
    func sharedJob<Value, Request>(_ key: ShareKey, of type: Job<Value, Request>.Type) -> Job<Value, Request>? {
        guard let job = shared[key] as? Job<Value, Request>, job.acceptsWaiters else { return nil }
        return job
    }

    func share<Value, Request>(_ key: ShareKey, job: Job<Value, Request>) {
        shared[key] = job
    }

    func unshare<Value, Request>(_ key: ShareKey, job: Job<Value, Request>) {
        if shared[key] === job { shared[key] = nil }
    }

    /// Registers a callback for when the job is cancelled.
    @_specialize(exported: true, where Value == [UInt8], Request == [UInt8])
    @_spi(LoadstateC) public func onCancel<Value, Request>(job id: UInt64, of type: Job<Value, Request>.Type,
                                         _ hook: @escaping () -> Void) -> ResultCode {
        table.withLock { storage -> ResultCode in
            guard let handle = storage.handles[id] else {
                return table.wasIssued(id, as: .job) ? .cancelled : .notFound
            }
            guard let job = handle as? Job<Value, Request>, job.phase == .running else {
                return handle is Job<Value, Request> ? .cancelled : .notFound
            }
            job.cancelHooks.append(hook)
            return .ok
        }
    }

    /// Whether a job should stop: true once it no longer runs.
    @_specialize(exported: true, where Value == [UInt8], Request == [UInt8])
    @_spi(LoadstateC) public func isJobCancelled<Value, Request>(_ id: UInt64, of type: Job<Value, Request>.Type) -> Result<Bool, ResultCode> {
        table.withLock { storage in
            if let job = storage.handles[id] as? Job<Value, Request> {
                return .success(job.phase != .running)
            }
            return table.wasIssued(id, as: .job) ? .success(true) : .failure(.notFound)
        }
    }

    /// Whether the job is still running (for host callbacks queued earlier).
    @_specialize(exported: true, where Value == [UInt8], Request == [UInt8])
    @_spi(LoadstateC) public func isRunning<Value, Request>(_ job: Job<Value, Request>) -> Bool {
        table.withLock { _ in job.phase == .running }
    }
}
