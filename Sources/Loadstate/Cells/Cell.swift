import CLibUV
import Synchronization

/// A cell: one state machine, loadable or process, fed by jobs.
///
/// Lifecycle: created on any thread and inserted in the runtime's table;
/// its operations run on the loop thread (`load`, `cancel`, `reset`,
/// `setLoaded`, `setError`, `free`); it reports every event to `observer`
/// on the loop thread, with itself (so observers need not keep the cell). `markFreed` (any thread) stops all later events at
/// once; `free` (loop) then cancels the running job.
///
/// One load is a *session*: the state to restore if it is cancelled, when
/// it began, and the job of its current attempt (nil during a retry
/// back-off). Its spec is `lastSpec`, which `refresh` reloads.
///
/// The cell's state is kept once, in `published` (the latest event): the
/// loop thread writes it under the table lock with each event, and reads
/// it without the lock (it is the only writer).
@_spi(LoadstateC) public final class Cell<Value, Request>: Handle, @unchecked Sendable {
    struct Session {
        /// The state before the load (or before the first of a chain of
        /// superseding loads), restored by a cancel.
        var restore: CellState<Value, Request>
        /// When the load began (`uv_hrtime`), for its timeout, interrupts
        /// and latency metric; 0 for a load with none of them (the clock
        /// is not read).
        var startedAtNs: UInt64
        var job: Job<Value, Request>?
        var serial: UInt32
        /// `leaveRequests` when the load was asked for (0: not checked). A
        /// later request means a queued operation will end this load: no
        /// job starts for it meanwhile.
        var ticket: UInt32
        var attempt: UInt32
        /// Where the load's job waits in its loader's queue (see
        /// `LoadOptions.priority`, `setPriority`).
        var priority: Int32
        /// The spec that `refresh` reloaded before the load (or before the
        /// first of a chain of superseding loads): a cancel restores it with
        /// the state, so that a refresh reloads the request the restored
        /// state shows. Boxed, so that a session grows by a pointer only.
        var restoreSpec: SpecBox?
    }

    /// A spec kept aside by a session (see `Session.restoreSpec`).
    final class SpecBox {
        let spec: LoadSpec<Value, Request>
        init(_ spec: LoadSpec<Value, Request>) { self.spec = spec }
    }

    // Stored properties are laid out in this order: pointers and words
    // first, small fields last, so that cells stay small.
    //
    // The variables are `@exclusivity(unchecked)`: the loop thread and the
    // table lock order every access to them, and the dynamic exclusivity
    // checks (a runtime call per access) cost about a fifth of a load's
    // instructions in a build that cannot pass
    // `-enforce-exclusivity=unchecked`, such as a package's dependency. The
    // same holds for the job's, the loader's, the handle map's and the
    // loop's state.
    unowned(unsafe) let runtime: Runtime
    private let observer: CellObserver<Value, Request>
    private let freed = Atomic<Bool>(false)
    /// Whether the cell emits PROGRESS events (set from any thread).
    private let reportsProgress = Atomic<Bool>(true)
    /// The host's name for the cell (see `HandleName`), or nil. Set before
    /// the cell is inserted in the runtime's table, never after.
    @exclusivity(unchecked) @usableFromInline package var name: String?
    /// Loop thread: the cell's last state events, kept while an inspector
    /// runs (nil until then).
    var inspectorHistory: CellHistory?

    // Written on the loop thread under the table lock.
    @exclusivity(unchecked) private var published: CellEvent<Value, Request>

    // Guarded by the table lock: what callers on other threads check.
    /// The job the cell waits for, as seen from other threads.
    @exclusivity(unchecked) private var currentJob: Job<Value, Request>?
    @exclusivity(unchecked) private var lastLoaderID: UInt64 = 0
    /// How many operations that end the cell's load (cancel, reset, load,
    /// set_*, free) were asked for.
    @exclusivity(unchecked) private var leaveRequests: UInt32 = 0

    // Loop thread only.
    @exclusivity(unchecked) private var loads: UInt32 = 0
    /// Counts lookups in a remote cache (see `load`) and the operations that
    /// end them: a lookup's answer starts its load only if none came since.
    @exclusivity(unchecked) private var lookups: UInt32 = 0
    @exclusivity(unchecked) private var session: Session?
    /// The spec of the last load started: the running one, or what `refresh` reloads.
    @exclusivity(unchecked) private var lastSpec: LoadSpec<Value, Request>?
    @exclusivity(unchecked) private var timers: LoadTimers?
    @exclusivity(unchecked) private var rng = SystemRandomNumberGenerator()
    /// Polls that failed in a row (see `pollAfterLoad`).
    @exclusivity(unchecked) private var pollFailures: UInt32 = 0
    /// The cell waits in the runtime's `PollControl` for polling to resume.
    @exclusivity(unchecked) private var pollParked = false
    /// The load's current attempt waits in the runtime's `HostSignals` to be online.
    @exclusivity(unchecked) private var pausedOffline = false
    /// When the cell last refreshed on returning to the foreground (wall ms).
    @exclusivity(unchecked) private var foregroundRefreshAtMs: UInt64 = 0
    /// The cell runs a prefetch (`Runtime.prefetch`): its jobs take loads
    /// of their key that do not ask to share.
    @exclusivity(unchecked) var isPrefetch = false
    /// The memory cache entry the cell observes (see `observeCacheEntry`).
    @exclusivity(unchecked) var observedEntry: ObservedEntry?
    /// `publishAdmission` published an event that `deliverAdmission` has
    /// not reported yet.
    @exclusivity(unchecked) private var admissionUndelivered = false
    /// The write whose optimistic values the process run under way shows
    /// (see `MutationRun`); it ends with the run's session.
    @exclusivity(unchecked) var mutation: MutationRun?

    // Guarded by the table lock.
    /// Set when the cell asked to leave a job other cells also wait for:
    /// how many of its operations were accepted then (the cell gets no later one).
    @exclusivity(unchecked) var leaveMark: UInt32?
    /// `leaveRequests` when the queued cancel or reset that has not run yet
    /// was asked for (0: none queued), and whether it is a reset.
    @exclusivity(unchecked) private var queuedStop: UInt32 = 0
    @exclusivity(unchecked) private var queuedStopResets = false
    @exclusivity(unchecked) private var loadRequested = false

    @usableFromInline package let flavor: CellFlavor

    /// The cell the runtime observer knows this one as: for a page of a
    /// pages cell, the pages cell's id (which reports the page's events to
    /// the observer as its own, instead of the page's); nil: itself.
    @usableFromInline package var observedAs: UInt64?

    /// A cell whose events go to a closure.
    @usableFromInline package convenience init(id: UInt64, flavor: CellFlavor, runtime: Runtime,
                            observer: @escaping (Cell, CellEvent<Value, Request>) -> Void) {
        self.init(id: id, flavor: flavor, runtime: runtime, observer: ClosureObserver(observer))
    }

    @usableFromInline package init(id: UInt64, flavor: CellFlavor, runtime: Runtime, observer: CellObserver<Value, Request>) {
        self.flavor = flavor
        self.runtime = runtime
        self.observer = observer
        published = CellEvent(type: .state, cell: id, seq: 0, load: 0,
                              state: .initial(at: Clock.wallMs()), stateChanged: true,
                              isCancelled: false, elapsedMs: 0, progressDone: 0, progressTotal: 0)
        super.init(id: id)
    }

    /// Whether progress reported by the cell's jobs becomes PROGRESS
    /// events (the default). Off, the progress is dropped: no event, no
    /// `seq` taken. Any thread may change it; it applies to progress
    /// reported from then on.
    @usableFromInline package var deliversProgress: Bool {
        get { reportsProgress.load(ordering: .relaxed) }
        set { reportsProgress.store(newValue, ordering: .relaxed) }
    }

    /// Whether the cell was freed; a freed cell emits nothing.
    @usableFromInline package var isFreed: Bool { freed.load(ordering: .acquiring) }

    /// Loop thread, when the runtime shuts down: as `lds_loadable_free`.
    @_specialize(where Value == [UInt8], Request == [UInt8])
    override func shutdown(runtime: Runtime) {
        markFreed()
        free()
    }

    /// Any thread: no event of the cell is reported after this returns
    /// (apart from one already being reported on another thread).
    @usableFromInline package func markFreed() {
        freed.store(true, ordering: .releasing)
    }

    /// The cell's latest event (seq 0 before the first); any thread.
    @usableFromInline package var latestEvent: CellEvent<Value, Request> {
        @_specialize(exported: true, where Value == [UInt8], Request == [UInt8])
        get { runtime.table.withLock { _ in published } }
    }

    /// The current state. Loop thread only (elsewhere use `latestEvent`).
    @usableFromInline package var state: CellState<Value, Request> { published.state }

    /// Any thread: records that a load with this loader was asked for, so
    /// that `refresh` can be accepted or refused at once.
    @usableFromInline package func noteLoadRequested(loader: UInt64) {
        runtime.table.withLock { _ in noteLoadRequestedLocked(loader: loader) }
    }

    private func noteLoadRequestedLocked(loader: UInt64) {
        loadRequested = true
        lastLoaderID = loader
    }

    /// Any thread, called by every operation that makes the cell leave its
    /// job (cancel, reset, a new load, set_*, free) before it is queued: a
    /// job that only this cell waits for takes no more operations from
    /// then on, so that a job completed after the call is refused.
    /// Returns the ticket a load asked for by this call passes to `load`.
    @discardableResult
    @_specialize(exported: true, where Value == [UInt8], Request == [UInt8])
    @usableFromInline package func requestLeave() -> UInt64 {
        runtime.table.withLock { _ in requestLeaveLocked() }
    }

    /// Any thread: asks for an operation that ends the cell's load (cancel,
    /// reset, set_*, free) and queues it for the loop thread. `skippable`
    /// (all but a free, which releases the cell's timers): a free of the
    /// runtime may drop it unrun (see `EventLoop.executeSkippable`).
    @_specialize(exported: true, where Value == [UInt8], Request == [UInt8])
    @usableFromInline package func leave(skippable: Bool = true, then operation: @escaping (Cell) -> Void) {
        // Queued after the lock: an operation that is not a load may run before a load asked for
        // before it on another thread, and that load then runs after it as the newer operation;
        // only a load must not run after an operation asked for later (see `queueLeaving`).
        requestLeave()
        if skippable {
            runtime.loop.executeSkippable { [self] in operation(self) }
        } else {
            runtime.loop.execute { [self] in operation(self) }
        }
    }

    /// Any thread: records a load (of `loader`, when given: see
    /// `prepareLoadLocked`; a refresh without) and queues `work` for the
    /// loop thread with its ticket, under one acquisition of the table
    /// lock. So a load never runs on the loop after an operation of the
    /// cell asked for later, whatever threads ask for them: it would find
    /// itself superseded and start no job, and no later operation would
    /// come to end it (the cell would stay loading).
    @usableFromInline package func queueLeaving(loader: UInt64? = nil, _ work: @escaping (UInt64) -> Void) {
        runtime.table.withLock { _ in
            if let loader { noteLoadRequestedLocked(loader: loader) }
            let ticket = requestLeaveLocked()
            // A load (or refresh) still queued when the runtime is freed is
            // dropped: it would start a job the shutdown cancels at once.
            runtime.loop.executeSkippable { work(ticket) }
        }
    }

    /// Any thread: asks for a cancel (`reset` false) or a reset of the
    /// cell's load and queues it, unless it would change nothing: a cancel
    /// of a cell that was never asked to load, or a cancel or reset that
    /// follows a queued reset (or a cancel that follows a queued cancel)
    /// with nothing asked for in between. So a host that cancels one cell
    /// in a loop queues one operation at a time, not one per call.
    @_specialize(exported: true, where Value == [UInt8], Request == [UInt8])
    @usableFromInline package func stop(reset: Bool) {
        let queued = runtime.table.withLock { _ -> UInt32 in
            if !reset && !loadRequested { return 0 }
            if queuedStop != 0 && queuedStop == leaveRequests && (queuedStopResets || !reset) { return 0 }
            queuedStop = UInt32(truncatingIfNeeded: requestLeaveLocked())
            queuedStopResets = reset
            return queuedStop
        }
        guard queued != 0 else { return }
        runtime.loop.executeSkippable { [self] in
            // From here on a later stop changes something again (a load the
            // loop starts itself, such as a cache invalidation's, may run).
            runtime.table.withLock { _ in
                if queuedStop == queued { queuedStop = 0 }
            }
            if reset { self.reset() } else { cancel() }
        }
    }

    /// `requestLeave`, with the table lock already held.
    @discardableResult
    @usableFromInline package func requestLeaveLocked() -> UInt64 {
        leaveRequests &+= 1
        if leaveRequests == 0 { leaveRequests = 1 }  // 0 means: not checked
        guard let job = currentJob, job.phase == .running, leaveMark == nil else { return UInt64(leaveRequests) }
        leaveMark = job.accepted
        job.pendingLeaves += 1
        if job.pendingLeaves >= job.waiterCount {
            // Every waiting cell is leaving: the job takes nothing more.
            job.phase = .cancelling
        }
        return UInt64(leaveRequests)
    }

    /// With the table lock held: what a load asked for on another thread
    /// records before it is queued (`noteLoadRequested` and `requestLeave`).
    /// Returns the load's ticket (see `load(_:ticket:)`).
    @_specialize(exported: true, where Value == [UInt8], Request == [UInt8])
    @usableFromInline package func prepareLoadLocked(loader: UInt64) -> UInt64 {
        noteLoadRequestedLocked(loader: loader)
        return requestLeaveLocked()
    }


    /// Any thread: the loader `refresh` would use, or nil if no load was
    /// ever asked for.
    @usableFromInline package var refreshLoaderID: UInt64? {
        @_specialize(exported: true, where Value == [UInt8], Request == [UInt8])
        get { runtime.table.withLock { _ in loadRequested ? lastLoaderID : nil } }
    }

    // MARK: - Operations (loop thread)

    /// Starts a load: cancels the running one, emits loading (or the
    /// current state flagged refreshing when silent) and starts a job.
    ///
    /// `ticket`: what `requestLeave` (or `prepareLoadLocked`) returned when
    /// the load was asked for on another thread; if the cell was asked for
    /// another operation that ends loads since, no job starts before that
    /// operation runs. 0 skips the check.
    @_specialize(exported: true, where Value == [UInt8], Request == [UInt8])
    @usableFromInline package func load(_ spec: LoadSpec<Value, Request>, ticket: UInt64 = 0) {
        load(spec, markStale: false, ticket: ticket)
    }

    /// `markStale`: the shown value was invalidated (flag it while reloading).
    private func load(_ spec: LoadSpec<Value, Request>, markStale: Bool, ticket: UInt64 = 0,
                      looked: Bool = false) {
        guard !isFreed else { return }
        // A remote cache (Redis) is asked first, without waiting: the load
        // goes on when its answer comes, unless another operation came
        // meanwhile. Its front tier answers at once.
        if !looked, let cache = spec.cache, cache.policy != .loadOnly, flavor == .loadable,
           let remote = cache.store as? RedisCache, !remote.hasLocalEntry(cache.key) {
            // The last request already: a refresh after a cancel that came
            // before the answer reloads it.
            lastSpec = spec
            lookups &+= 1
            let lookup = lookups
            remote.fetch(cache.key) { [self] entry, failure in
                guard !isFreed, lookup == lookups else { return }
                remote.withFetched(cache.key, entry, failure: failure) {
                    load(spec, markStale: markStale, ticket: ticket, looked: true)
                }
            }
            return
        }
        stopPolling()
        // What a cancel of this load (or of the chain it continues) gives back to `refresh`.
        let restoreSpec: SpecBox?
        if let s = session {
            restoreSpec = s.restoreSpec
        } else if let previous = lastSpec {
            restoreSpec = SpecBox(previous)
        } else {
            restoreSpec = nil
        }
        var restore = abandonSession() ?? state
        restore.isQueued = false
        restore.isPaused = false
        lastSpec = spec
        observeCacheEntry(spec.cache)
        // What a silent load shows (the current state unless the cache has
        // one); copied only for such a load: a copy retains what it holds.
        var cachedShown: CellState<Value, Request>?
        if let cache = spec.cache, cache.policy != .loadOnly, flavor == .loadable {
            switch serveFromCache(cache, spec: spec) {
            case .served:
                pollAfterLoad(failed: state.status == .error)
                return
            case .revalidate(let cached):
                // The cached value is shown while a silent load revalidates it.
                cachedShown = cached
                lastSpec?.options.silent = true
            case .load: break
            }
        }
        loads &+= 1
        let interrupts = !spec.options.interruptsMs.isEmpty
        let counted = runtime.metrics.isEnabled
        if counted { runtime.metrics.loadStarted(spec.loader.metrics) }
        let timed = spec.options.timeoutMs > 0 || interrupts || counted
        session = Session(restore: restore, startedAtNs: timed ? uv_hrtime() : 0, job: nil, serial: loads,
                          ticket: UInt32(truncatingIfNeeded: ticket),
                          attempt: 1, priority: spec.options.priority, restoreSpec: restoreSpec)
        // A load that shares a running job joins it before its first event,
        // so that a host seeing that event knows the cell waits for the job.
        let joined = joinSharedJob(spec)
        // Offline, a load that would call its loader waits (flagged paused) or fails instead.
        let held = !joined && runtime.hostSignals.holdsLoad(spec.options.offlineMode)
        let paused = held && spec.options.offlineMode == .wait
        // Whether the job will wait for its loader's admission, so that the
        // first event says so (`startAttempt` decides, at once after it).
        let queued = held ? false
            : joined ? session?.job?.isWaiting ?? false : spec.loader.admission?.mustWait() ?? false
        // Counted as paused before its event: a host that sees the event sees it in the statistics.
        if paused { parkOffline() }
        if spec.options.silent || cachedShown != nil {
            var shown = cachedShown ?? state
            shown.isRefreshing = true
            shown.attempt = 1
            shown.isQueued = queued
            shown.isPaused = paused
            if markStale { shown.isStale = true }
            emit(.state, shown, changed: markStale || shown.isFromCache)
        } else if flavor == .loadable, var shown = Self.waitingState(restore: restore, spec: spec) {
            shown.isQueued = queued
            emit(.state, shown)
        } else {
            var loading = CellState<Value, Request>(status: .loading, kind: spec.kind, value: nil, error: nil,
                                                    request: spec.request, isPartial: false, isRefreshing: false,
                                                    attempt: 1, updatedAt: Clock.wallMs())
            loading.isQueued = queued
            loading.isPaused = paused
            emit(.state, loading)
        }
        armTimers(timeoutMs: spec.options.timeoutMs, interrupts: interrupts)
        if paused {
            // Waits for `onlineResumed`.
        } else if held {
            // Its start (LOADING or REFRESHING) first, as any load's, then the failure.
            failLoad(UInt64(loads), with: LoadError(.offline, message: "the runtime is offline"))
        } else if !joined {
            startAttempt(spec, shownQueued: queued)
        }
    }

    private enum CacheOutcome {
        /// The cache answered; no job runs.
        case served
        /// Show this cached state, then revalidate it.
        case revalidate(CellState<Value, Request>)
        /// Load as usual.
        case load
    }

    /// A load the cache answers alone is a load of its own, ended `from_cache` (metrics): counted
    /// before its event, which a host may follow with a read of the counters.
    private func countFromCache(_ spec: LoadSpec<Value, Request>) {
        if runtime.metrics.isEnabled { runtime.metrics.loadFromCache(spec.loader.metrics) }
    }

    /// Shows what the cache holds for a load, as its policy says.
    private func serveFromCache(_ cache: CacheUse<Value>, spec: LoadSpec<Value, Request>) -> CacheOutcome {
        let now = Clock.wallMs()
        let hit = cache.lookup(at: now, wantsStale: cache.policy != .cacheFirst) {
            spec.loader.read($0, store: cache.store, key: cache.key, request: spec.request, freshMs: cache.freshMs,
                             nowMs: now)
        }
        // A stored failure (an HTTP 404 its loader lets the cache reuse)
        // is shown as the error it was, from the cache.
        func cached(_ hit: (value: Value, stale: Bool, serveWhileRevalidating: Bool, storedAt: UInt64,
                            error: LoadError?)) -> CellState<Value, Request> {
            var next = CellState(status: hit.error == nil ? .loaded : .error, kind: spec.kind, value: hit.value,
                                 error: hit.error, request: spec.request,
                                 isPartial: false, isRefreshing: false, attempt: 0, updatedAt: hit.storedAt)
            next.isFromCache = true
            next.isStale = hit.stale
            return next
        }
        switch cache.policy {
        case .loadOnly:
            return .load
        case .cacheOnly:
            countFromCache(spec)
            if let hit {
                emit(.state, cached(hit))
            } else if let failure = (cache.store as? RedisCache)?.fetchFailure(cache.key) {
                // Redis could not answer: an error of its own, not a miss.
                emit(.state, CellState(status: .error, kind: spec.kind, value: nil,
                                       error: LoadError(domain: .redis, code: failure.code.rawValue,
                                                        message: failure.message),
                                       request: spec.request, isPartial: false, isRefreshing: false, attempt: 0,
                                       updatedAt: Clock.wallMs()))
            } else {
                emit(.state, CellState(status: .error, kind: spec.kind, value: nil,
                                       error: LoadError(.notFound, message: "not in the cache"), request: spec.request,
                                       isPartial: false, isRefreshing: false, attempt: 0, updatedAt: Clock.wallMs()))
            }
            return .served
        case .cacheFirst:
            if let hit, hit.serveWhileRevalidating { return .revalidate(cached(hit)) }
            guard let hit, !hit.stale else { return .load }
            countFromCache(spec)
            emit(.state, cached(hit))
            return .served
        case .cacheThenLoad:
            guard let hit else { return .load }
            return .revalidate(cached(hit))
        }
    }

    /// Reloads the last load's spec silently; nothing when there was none.
    /// The cache key of the last load started (see `lastSpec`), if it used
    /// a cache. Loop thread.
    var cacheKey: [UInt8]? { lastSpec?.cache?.key }

    /// The cache use and request of the last load started (see `lastSpec`),
    /// the number the next load takes, and whether a load runs. Loop thread.
    var lastCacheUse: CacheUse<Value>? { lastSpec?.cache }
    var lastRequest: Request? { lastSpec?.request }
    var nextLoadSerial: UInt32 { loads &+ 1 }
    var isLoadRunning: Bool { session != nil }

    /// Loop: shows `next` without ending the load under way (a write's
    /// optimistic value, or what its rollback brings back, flagged
    /// `rolledBack`: see `OptimisticLedger`).
    func showWritten(_ next: CellState<Value, Request>, rolledBack: Bool) {
        guard !isFreed else { return }
        var event = makeEvent(.state, next)
        event.isRolledBack = rolledBack
        publish(event)
    }

    /// A refresh asks the loader, whatever the cache holds: a load that
    /// read its cache first (cache-first, cache-then-load) reloads without
    /// reading it, and stores the result. A cache-only load reads the cache
    /// again. `ticket` as for `load`.
    @_specialize(exported: true, where Value == [UInt8], Request == [UInt8])
    @usableFromInline package func refresh(ticket: UInt64 = 0) {
        reload(ticket: ticket)
    }

    /// `refresh`'s work (also a poll's).
    private func reload(ticket: UInt64) {
        guard var spec = lastSpec else { return }
        spec.options.silent = true
        if let cache = spec.cache, cache.policy == .cacheFirst || cache.policy == .cacheThenLoad {
            spec.cache = cache.with(policy: .loadOnly)
        }
        load(spec, markStale: false, ticket: ticket)
    }

    /// Loop: entries of `store` under `prefix` were invalidated. A cell
    /// showing one of them, with no load running, reloads it silently from
    /// its loader (not from the cache), its value flagged stale meanwhile.
    func cacheInvalidated(_ store: AnyObject, prefix: [UInt8]) {
        guard !isFreed, session == nil, state.status == .loaded, var spec = lastSpec, let cache = spec.cache,
              cache.store === store, cache.key.starts(with: prefix) else { return }
        spec.options.silent = true
        spec.cache = cache.forReloadAfterInvalidation()
        load(spec, markStale: true)
    }

    /// Cancels the running load: the state before it comes back, flagged cancelled.
    @usableFromInline package func cancel() {
        guard !isFreed else { return }
        stopPolling()
        let restoreSpec = session?.restoreSpec
        guard var restore = abandonSession() else { return }
        restoreLastSpec(restoreSpec, shown: restore)
        restore.isRefreshing = false
        emit(.state, restore, cancelled: true)
    }

    /// After a cancel: `refresh` reloads the request the restored state
    /// (`shown`) shows, with the loader and options that loaded it. When
    /// it shows none (absent, or a value set by hand), `refresh` keeps
    /// reloading the last load's request: the cancelled one.
    private func restoreLastSpec(_ box: SpecBox?, shown: CellState<Value, Request>) {
        guard shown.request != nil, let spec = box?.spec else { return }
        lastSpec = spec
        observeCacheEntry(spec.cache)
        let loader = spec.loader.id
        runtime.table.withLock { _ in lastLoaderID = loader }
    }

    /// Cancels the running load and makes the cell absent.
    @usableFromInline package func reset() {
        guard !isFreed else { return }
        stopPolling()
        let hadSession = abandonSession() != nil
        observeCacheEntry(nil)
        if !hadSession && state.status == .absent && !state.isRefreshing { return }
        emit(.state, .initial(at: Clock.wallMs()))
    }

    /// Cancels the running load and sets a value.
    @_specialize(exported: true, where Value == [UInt8], Request == [UInt8])
    @usableFromInline package func setLoaded(_ value: Value) {
        guard !isFreed else { return }
        stopPolling()
        abandonSession()
        emit(.state, CellState(status: .loaded, kind: 0, value: value, error: nil, request: nil,
                               isPartial: false, isRefreshing: false, attempt: 0, updatedAt: Clock.wallMs()))
    }

    /// Cancels the running load and shows `newState`, whatever it is (full
    /// manual control: a `loading` state has no job behind it, and a later
    /// `set*`, load, cancel or reset ends it).
    @usableFromInline package func setState(_ newState: CellState<Value, Request>) {
        guard !isFreed else { return }
        abandonSession()
        emit(.state, newState)
    }

    /// Cancels the running load and sets an error.
    @_specialize(exported: true, where Value == [UInt8], Request == [UInt8])
    @usableFromInline package func setError(_ error: LoadError) {
        guard !isFreed else { return }
        stopPolling()
        abandonSession()
        emit(.state, CellState(status: .error, kind: state.kind, value: nil, error: error, request: nil,
                               isPartial: false, isRefreshing: false, attempt: 0, updatedAt: Clock.wallMs()))
    }

    /// Fails the load numbered `serial` (see `CellEvent.load`) if it still
    /// runs: its job is cancelled and the cell shows `error`.
    @usableFromInline package func failLoad(_ serial: UInt64, with error: LoadError) {
        guard !isFreed, let s = session, UInt64(s.serial) == serial, let spec = lastSpec else { return }
        if let job = s.job {
            job.leave(self)
            guard let current = session?.serial, UInt64(current) == serial else { return }
        }
        endSession(LoadOutcome(failure: error))
        emit(.state, CellState(status: .error, kind: spec.kind, value: nil, error: error, request: spec.request,
                               isPartial: false, isRefreshing: false, attempt: s.attempt,
                               updatedAt: Clock.wallMs()))
        pollAfterLoad(failed: true)
    }

    /// Ends the cell: cancels its job, closes its timers. Call `markFreed` first.
    @_specialize(exported: true, where Value == [UInt8], Request == [UInt8])
    @usableFromInline package func free() {
        stopPolling()
        abandonSession()
        observeCacheEntry(nil)
        timers?.close()
        timers = nil
    }

    /// Gives the load under way another priority: a job that still waits
    /// for its loader's admission moves in the queue (a shared job takes
    /// the highest priority of its cells); a job that runs is not affected.
    /// The priority is kept for `refresh`. Nothing without a load under way.
    @usableFromInline package func setPriority(_ priority: Int32) {
        guard !isFreed, session != nil else { return }
        session?.priority = priority
        lastSpec?.options.priority = priority
        if let job = session?.job, job.isWaiting { job.updatePriority() }
    }

    /// The priority of the load under way (`Int32.min` without one), for
    /// the job it waits for.
    var waitingPriority: Int32 { session?.priority ?? Int32.min }

    /// Loop, under the table lock (which the job takes anyway, to become
    /// visible to job calls): the job this cell waits for leaves its
    /// loader's queue. When the cell's load waits for `job` and shows
    /// QUEUED, the cell's latest event becomes the next event of the same
    /// state without the flag. It is changed in place, so that nothing of
    /// the state is copied, and `deliverAdmission` reports it once the lock
    /// is released: one acquisition of the lock for both, where an `emit`
    /// would take a second one.
    func publishAdmission(_ job: Job<Value, Request>) {
        guard session?.job === job, !isFreed, published.state.isQueued else { return }
        // The fields `makeEvent(.state, changed: false)` would give.
        published.type = .state
        published.seq += 1
        published.load = UInt64(session?.serial ?? 0)
        published.stateChanged = false
        published.isCancelled = false
        published.isWithoutValue = false
        published.elapsedMs = 0
        published.progressDone = 0
        published.progressTotal = 0
        published.state.isQueued = false
        admissionUndelivered = true
    }

    /// Loop: reports the event `publishAdmission` published, if it did.
    func deliverAdmission() {
        guard admissionUndelivered else { return }
        admissionUndelivered = false
        deliver(published)
    }

    /// Emits the current state again, flagged queued or not.
    private func showQueued(_ queued: Bool) {
        if let event = queuedEvent(queued) { publish(event) }
    }

    /// The event of the current state flagged queued or not; nil when the
    /// state already says so.
    private func queuedEvent(_ queued: Bool) -> CellEvent<Value, Request>? {
        guard state.isQueued != queued else { return nil }
        var next = state
        next.isQueued = queued
        return makeEvent(.state, next, changed: false)
    }

    // MARK: - Polling

    /// After a load ended (it failed when `failed`): with a refresh
    /// interval, the next refresh is due that long after now, or, after a
    /// failure with `pollsAfterError`, after the longer of the interval and
    /// the retry back-off of the failures in a row. A failure without
    /// `pollsAfterError` stops polling.
    private func pollAfterLoad(failed: Bool) {
        guard let options = lastSpec?.options, options.refreshIntervalMs > 0, !isFreed, session == nil else { return }
        var delay = UInt64(options.refreshIntervalMs)
        if failed {
            guard options.pollsAfterError else { return }
            pollFailures = min(pollFailures &+ 1, 32)
            let exponent = UInt64(min(pollFailures - 1, 31))
            let backoff = min(UInt64(options.retryBaseMs) << exponent, UInt64(options.retryMaxMs))
            delay = max(delay, backoff)
        } else {
            pollFailures = 0
        }
        let t = loadTimers()
        t.arm(&t.poll, loop: runtime.loop, after: delay) { [unowned self] in pollDue() }
    }

    /// The poll timer fired: refresh, unless polling is paused (then wait
    /// for it to resume) or a load runs.
    private func pollDue() {
        guard !isFreed, session == nil, let options = lastSpec?.options else { return }
        if runtime.pollControl.isPaused || runtime.hostSignals.holdsPoll(options) {
            pollParked = true
            runtime.pollControl.park(self)
            return
        }
        let failures = pollFailures
        reload(ticket: 0)
        pollFailures = failures
    }

    /// Stops polling (a load, cancel, reset, set_* or free).
    private func stopPolling() {
        timers?.poll?.stop()
        pollFailures = 0
        if pollParked {
            pollParked = false
            runtime.pollControl.unpark(self)
        }
    }

    // MARK: - Sessions and jobs

    // The session and the spec are read field by field in the paths every
    // load takes (the spec as a borrowed argument): a copy of either
    // retains (and later releases) everything they hold.

    /// Starts the current session's next attempt of `spec` (`lastSpec`).
    ///
    /// A loader with limits (`Loader.admission`) may hold the job in its
    /// queue: the job exists (loads of its key join it) but its loader is
    /// not called until it is admitted. `shownQueued`: whether the event
    /// just emitted said the job waits; another event corrects it if not so.
    private func startAttempt(_ spec: LoadSpec<Value, Request>, shownQueued: Bool = false) {
        guard let attempt = session?.attempt, let ticket = session?.ticket, let priority = session?.priority else {
            return
        }
        let loader = spec.loader
        guard !loader.isRetired else {
            // The loader was freed after the load was asked for: no job can start.
            endSession(.failed)
            emit(.state, CellState(status: .error, kind: spec.kind, value: nil,
                                   error: LoadError(.notFound, message: "the loader was freed"),
                                   request: spec.request, isPartial: false, isRefreshing: false,
                                   attempt: attempt, updatedAt: Clock.wallMs()))
            return
        }
        if joinSharedJob(spec) {
            showQueued(session?.job?.isWaiting ?? false)
            return
        }
        let key = spec.options.shareKey ?? (isPrefetch ? spec.cache?.key : nil)
        let shareKey = key.map { ShareKey(loader: loader.id, key: $0) }
        let job = Job(id: runtime.table.makeID(.job), runtime: runtime, cell: self, loader: loader,
                      request: spec.request, attempt: attempt, shareKey: shareKey, cache: spec.cache,
                      isPrefetch: isPrefetch)
        let admission = loader.admission
        // Whether the loader's limits let the job start now (it then counts
        // as running); without limits, always.
        let admitted = admission?.tryStart() ?? true
        let started = runtime.table.withLock { storage -> Bool in
            // A load already superseded by a later call starts no job: the
            // operation that call queued ends it.
            guard !isStale(ticket: ticket) else { return false }
            // A job that waits is seen by job calls once it is admitted.
            if admitted { storage.handles[job.id] = job }
            currentJob = job
            return true
        }
        guard started else {
            if admitted { admission?.untake() }
            return
        }
        if let shareKey { runtime.share(shareKey, job: job) }
        session?.job = job
        loader.jobStarted()
        if let admission {
            job.priority = priority
            guard admitted else {
                job.admissionPhase = .waiting
                if runtime.metrics.isEnabled { runtime.noteQueued(job) }
                // Made here, where the job's types are known: its start runs specialized.
                job.admissionTicket = admission.enqueue(priority: priority, job.admissionStart())
                if !shownQueued { showQueued(true) }
                return
            }
            job.admissionPhase = .counted
            if shownQueued { showQueued(false) }
        }
        job.begin()
    }

    /// Waits for the running job of another load of `spec` (`lastSpec`)
    /// with the same share key, if there is one that takes new cells.
    /// Returns whether it did. Inlined: for the many loads that share
    /// nothing it is one check of the spec.
    @inline(__always)
    private func joinSharedJob(_ spec: LoadSpec<Value, Request>) -> Bool {
        // A load that does not ask to share still joins a prefetch of its cache key.
        guard let key = spec.options.shareKey ?? spec.cache?.key, let ticket = session?.ticket, session?.job == nil,
              let running = runtime.sharedJob(ShareKey(loader: spec.loader.id, key: key), of: Job<Value, Request>.self),
              spec.options.shareKey != nil || running.isPrefetch
        else { return false }
        let joined = runtime.table.withLock { _ -> Bool in
            // A job whose cells all asked to leave takes no new one; a job
            // whose result is accepted but not yet applied still does.
            guard running.phase == .running || running.phase == .ending, !isStale(ticket: ticket) else { return false }
            running.waiterCount += 1
            currentJob = running
            return true
        }
        guard joined else { return false }
        if runtime.metrics.isEnabled { runtime.metrics.loadShared(spec.loader.metrics) }
        running.waiters.append(self)
        session?.job = running
        if running.isWaiting { running.updatePriority() }
        return true
    }

    /// With the table lock held: whether another operation that ends loads
    /// was asked for since the session's load.
    private func isStale(ticket: UInt32) -> Bool {
        ticket != 0 && ticket != leaveRequests
    }

    /// Ends the current session without an event: first applies what its
    /// job already reported, then leaves the job (cancelling it if no
    /// other cell waits for it). Returns the state to restore if a session
    /// was still under way.
    @discardableResult
    private func abandonSession() -> CellState<Value, Request>? {
        lookups &+= 1
        if let job = session?.job {
            job.leave(self)
        }
        guard let restore = session?.restore else { return nil }
        endSession(.cancelled)
        return restore
    }

    private func forgetJob() {
        runtime.table.withLock { _ in clearCurrentJobLocked() }
    }

    /// For the job, with the table lock held: the cell no longer waits.
    func clearCurrentJobLocked() {
        currentJob = nil
        leaveMark = nil
    }

    private func endSession(_ outcome: LoadOutcome) {
        if let run = mutation, UInt64(run.serial) == currentLoad {
            mutation = nil
            runtime.optimisticLedger.end(run, succeeded: outcome == .succeeded)
        }
        if session?.job != nil { forgetJob() }
        if pausedOffline {
            pausedOffline = false
            runtime.hostSignals.unpark(self)
        }
        if runtime.metrics.isEnabled, let startedAtNs = session?.startedAtNs, let loader = lastSpec?.loader {
            runtime.metrics.loadEnded(outcome, loader.metrics, startedAtNs: startedAtNs)
        }
        session = nil
        timers?.stop()
    }

    /// Applies an operation of the job this cell waits for (called by the job).
    func apply(_ op: JobOperation<Value>, from job: Job<Value, Request>) {
        guard session?.job === job, !isFreed, let attempt = session?.attempt, let kind = lastSpec?.kind else { return }
        if op.isTerminal { session!.job = nil }
        let request = lastSpec!.request
        func settled(_ status: Status, value: Value? = nil, error: LoadError? = nil) -> CellState<Value, Request> {
            CellState(status: status, kind: kind, value: value, error: error, request: request,
                      isPartial: false, isRefreshing: false, attempt: attempt, updatedAt: Clock.wallMs())
        }
        // What a finish without a value or a cancel from inside restores
        // (read before the session ends).
        let restore = op.restoresState ? session!.restore : .initial(at: 0)
        switch op {
        case .yield(let value):
            guard flavor == .loadable else { return }
            var next = settled(.loaded, value: value)
            next.isPartial = true
            // A kept previous value or a placeholder is replaced, not refreshed.
            next.isRefreshing = state.isRefreshing && !state.isPrevious && !state.isPlaceholder
            emit(.state, next)
        case .progress(let done, let total):
            if reportsProgress.load(ordering: .relaxed) {
                emit(.progress, progress: (done, total))
            }
        case .succeed(let value):
            if let run = mutation { run.result = run.encodedResult.withLock { $0 } ?? value as? [UInt8] }
            endSession(.succeeded)
            var next = settled(.loaded, value: flavor == .loadable ? value : nil)
            if let origin = job.cacheWrite?.origin, origin != .loaded {
                next.isFromCache = true
                next.isRevalidated = origin == .revalidated
                next.isStale = origin == .staleOnError
            }
            emit(.state, next)
            pollAfterLoad(failed: false)
        case .finish:
            endSession(.succeeded)
            var next: CellState<Value, Request>
            if flavor == .process {
                next = settled(.loaded)
            } else if job.yielded {
                next = state
                next.isPartial = false
            } else {
                next = restore
            }
            // Ending with the value last yielded changes flags only.
            let changed = !(job.yielded && flavor == .loadable)
            next.isRefreshing = false
            var event = makeEvent(.state, next, changed: changed)
            // Without a value, the state before the load is back: flagged,
            // so that no waiter takes it for this load's value.
            event.isWithoutValue = flavor == .loadable && !job.yielded
            publish(event)
            pollAfterLoad(failed: false)
        case .fail(let error, let retry):
            if retry != .never && attempt <= lastSpec!.options.retries {
                if case .after(let ms) = retry {
                    scheduleRetry(afterMs: ms)
                } else {
                    scheduleRetry(afterMs: nil)
                }
                return
            }
            endSession(LoadOutcome(failure: error))
            if state.isFromCache && state.status == .loaded && !state.isPrevious {
                // A failed revalidation: the cached value stays, with the error.
                var next = state
                next.isRefreshing = false
                next.error = error
                next.attempt = attempt
                emit(.state, next)
            } else {
                // An error that carries a value of the cell's type (an HTTP
                // response outside 2xx) keeps it in the error state.
                let carried = flavor == .loadable ? (error.underlying as? any ErrorWithValue)?.failureValue : nil
                let value = carried as? Value
                emit(.state, settled(.error, value: value, error: error))
            }
            pollAfterLoad(failed: true)
        case .cancelSelf:
            let restoreSpec = session?.restoreSpec
            endSession(.cancelled)
            restoreLastSpec(restoreSpec, shown: restore)
            var restore = restore
            restore.isRefreshing = false
            emit(.state, restore, cancelled: true)
        case .resetSelf:
            endSession(.cancelled)
            emit(.state, .initial(at: Clock.wallMs()))
        }
    }

    // MARK: - Timers

    private func loadTimers() -> LoadTimers {
        if let t = timers { return t }
        let t = LoadTimers()
        timers = t
        return t
    }

    private func armTimers(timeoutMs: UInt32, interrupts: Bool) {
        if timeoutMs > 0 {
            let t = loadTimers()
            t.arm(&t.timeout, loop: runtime.loop, after: UInt64(timeoutMs)) { [unowned self] in timedOut() }
        }
        if interrupts {
            armNextInterrupt()
        }
    }

    private func armNextInterrupt() {
        guard let s = session, let delays = lastSpec?.options.interruptsMs else { return }
        let t = loadTimers()
        guard t.nextInterrupt < delays.count else { return }
        t.interruptDueMs += UInt64(delays[t.nextInterrupt])
        t.nextInterrupt += 1
        armInterruptTimer(due: t.interruptDueMs, startedAtNs: s.startedAtNs)
    }

    private func armInterruptTimer(due: UInt64, startedAtNs: UInt64) {
        let elapsedNs = uv_hrtime() - startedAtNs
        let dueNs = due * 1_000_000
        let wait = dueNs > elapsedNs ? (dueNs - elapsedNs + 999_999) / 1_000_000 : 0
        let t = loadTimers()
        t.arm(&t.interrupt, loop: runtime.loop, after: wait) { [unowned self] in interrupted() }
    }

    private func interrupted() {
        guard let s = session, let t = timers, !isFreed else { return }
        var elapsedNs = uv_hrtime() - s.startedAtNs
        // libuv timers have millisecond granularity: never report early.
        if elapsedNs < t.interruptDueMs * 1_000_000 {
            armInterruptTimer(due: t.interruptDueMs, startedAtNs: s.startedAtNs)
            return
        }
        emit(.interrupt, elapsedMs: elapsedNs / 1_000_000)
        // Interrupts already due (the loop was late) are reported now, in
        // order, before any later timer of the load (its timeout) runs.
        let delays = lastSpec?.options.interruptsMs ?? []
        while t.nextInterrupt < delays.count,
              t.interruptDueMs + UInt64(delays[t.nextInterrupt]) <= elapsedNs / 1_000_000 {
            t.interruptDueMs += UInt64(delays[t.nextInterrupt])
            t.nextInterrupt += 1
            emit(.interrupt, elapsedMs: elapsedNs / 1_000_000)
            elapsedNs = uv_hrtime() - s.startedAtNs
        }
        armNextInterrupt()
    }

    private func timedOut() {
        guard let s = session, let timeoutMs = lastSpec?.options.timeoutMs else { return }
        // libuv timers have millisecond granularity: never time out early.
        let elapsedNs = uv_hrtime() - s.startedAtNs
        let dueNs = UInt64(timeoutMs) * 1_000_000
        if elapsedNs < dueNs {
            let t = loadTimers()
            t.arm(&t.timeout, loop: runtime.loop, after: (dueNs - elapsedNs + 999_999) / 1_000_000) {
                [unowned self] in timedOut()
            }
            return
        }
        failLoad(UInt64(s.serial), with: LoadError(.timedOut, underlying: TimeoutError()))
    }

    /// Waits before the next attempt: `afterMs` when the failure said how
    /// long, otherwise a random time up to base × 2^(attempt-1) ("full
    /// jitter"); never more than the maximum back-off.
    private func scheduleRetry(afterMs: UInt64?) {
        guard var s = session, let options = lastSpec?.options else { return }
        let delay: UInt64
        if let afterMs {
            delay = min(afterMs, UInt64(options.retryMaxMs))
        } else {
            let exponent = min(s.attempt - 1, 31)
            let ceiling = min(UInt64(options.retryBaseMs) << UInt64(exponent), UInt64(options.retryMaxMs))
            delay = ceiling == 0 ? 0 : UInt64.random(in: 0...ceiling, using: &rng)
        }
        s.attempt += 1
        s.job = nil
        session = s
        if runtime.metrics.isEnabled, let loader = lastSpec?.loader { runtime.metrics.loadRetried(loader.metrics) }
        forgetJob()
        let t = loadTimers()
        t.arm(&t.retry, loop: runtime.loop, after: delay) { [unowned self] in retry() }
    }

    private func retry() {
        guard let s = session, s.job == nil, !isFreed, !pausedOffline, let spec = lastSpec else { return }
        if runtime.hostSignals.holdsLoad(spec.options.offlineMode) {
            // Offline: the retry fails at once, or waits to be online.
            if spec.options.offlineMode == .fail {
                failLoad(UInt64(s.serial), with: LoadError(.offline, message: "the runtime is offline"))
                return
            }
            var next = state
            next.attempt = s.attempt
            next.isPaused = true
            parkOffline()
            emit(.state, next, changed: false)
            return
        }
        var next = state
        next.attempt = s.attempt
        next.isPaused = false
        let queued = spec.loader.admission?.mustWait() ?? false
        next.isQueued = queued
        emit(.state, next, changed: !spec.options.silent)
        startAttempt(spec, shownQueued: queued)
    }

    /// The number of the load under way (see `CellEvent.load`), if any.
    @usableFromInline package var currentLoad: UInt64? { session.map { UInt64($0.serial) } }

    /// Loop thread: the request of the load under way, if one is.
    package var currentRequest: Request? { session == nil ? nil : lastSpec?.request }

    // MARK: - Events

    /// Emits an event; with `newState`, the cell takes that state first.
    private func emit(_ type: EventType, _ newState: consuming CellState<Value, Request>? = nil, changed: Bool = true,
                      cancelled: Bool = false, elapsedMs: UInt64 = 0, progress: (UInt64, UInt64) = (0, 0)) {
        publish(makeEvent(type, newState, changed: changed, cancelled: cancelled, elapsedMs: elapsedMs,
                          progress: progress))
    }

    /// Makes `event` the cell's latest (under the table lock, for other
    /// threads' reads) and reports it.
    private func publish(_ event: CellEvent<Value, Request>) {
        runtime.table.withLock { _ in published = event }
        if event.type == .state, runtime.inspector != nil { recordForInspector(event) }
        // An admission event not reported yet is superseded by this one.
        admissionUndelivered = false
        deliver(event)
    }

    /// The next event, not yet published.
    private func makeEvent(_ type: EventType, _ newState: consuming CellState<Value, Request>? = nil,
                           changed: Bool = true, cancelled: Bool = false, elapsedMs: UInt64 = 0,
                           progress: (UInt64, UInt64) = (0, 0)) -> CellEvent<Value, Request> {
        CellEvent(type: type, cell: id, seq: published.seq + 1, load: UInt64(session?.serial ?? 0),
                  state: newState ?? published.state, stateChanged: changed && type == .state,
                  isCancelled: cancelled, elapsedMs: elapsedMs, progressDone: progress.0,
                  progressTotal: progress.1)
    }

    /// Loop: keeps a state event for the inspector's timeline (only while
    /// an inspector runs; at most `CellHistory.capacity` per cell).
    private func recordForInspector(_ event: CellEvent<Value, Request>) {
        let state = event.state
        var flags: UInt16 = 0
        if state.isQueued { flags |= CellHistory.queued }
        if state.isPaused { flags |= CellHistory.paused }
        if state.isRefreshing { flags |= CellHistory.refreshing }
        if state.isPartial { flags |= CellHistory.partial }
        if event.isCancelled { flags |= CellHistory.cancelled }
        if state.isFromCache { flags |= CellHistory.fromCache }
        if state.isStale { flags |= CellHistory.stale }
        if state.isPrevious { flags |= CellHistory.previous }
        if state.isPlaceholder { flags |= CellHistory.placeholder }
        if state.isOptimistic { flags |= CellHistory.optimistic }
        if event.isRolledBack { flags |= CellHistory.rolledBack }
        let history = inspectorHistory ?? CellHistory()
        inspectorHistory = history
        history.record(CellHistory.Entry(status: state.status, flags: flags, seq: event.seq, atMs: Clock.wallMs()))
    }

    /// Reports a published event to the cell's observers.
    private func deliver(_ event: CellEvent<Value, Request>) {
        if !isFreed {
            if runtime.metrics.isEnabled { runtime.metrics.eventDelivered() }
            observer.cellEvent(self, event)
            if observedAs == nil { runtime.observer?.cellEvent(self, event) }
        }
    }
}

/// What a cell reports its events to, on the loop thread: a subclass
/// overrides `cellEvent`. One object per cell, where a closure over
/// concrete Value and Request types would take two (its context, and the
/// thunk that adapts it to the cell's generic signature).
@_spi(LoadstateC) open class CellObserver<Value, Request> {
    @usableFromInline package init() {}

    /// Called for each event of `cell` (not after the cell was freed).
    open func cellEvent(_ cell: Cell<Value, Request>, _ event: CellEvent<Value, Request>) {}
}

/// An observer that calls a closure.
final class ClosureObserver<Value, Request>: CellObserver<Value, Request> {
    private let body: (Cell<Value, Request>, CellEvent<Value, Request>) -> Void

    init(_ body: @escaping (Cell<Value, Request>, CellEvent<Value, Request>) -> Void) {
        self.body = body
    }

    override func cellEvent(_ cell: Cell<Value, Request>, _ event: CellEvent<Value, Request>) {
        body(cell, event)
    }
}

/// A cell that may show cached values (any Value and Request).
protocol CacheViewer: AnyObject {
    func cacheInvalidated(_ store: AnyObject, prefix: [UInt8])
}

extension Cell: CacheViewer {}

extension Cell: OnlineWaiter, ForegroundTarget {
    /// The load's attempt waits for the runtime to be online.
    private func parkOffline() {
        pausedOffline = true
        runtime.hostSignals.park(self)
    }

    func onlineResumed() {
        guard pausedOffline else { return }
        pausedOffline = false
        guard let s = session, s.job == nil, !isFreed, let spec = lastSpec else { return }
        if s.attempt > 1 {
            retry()
            return
        }
        // The first attempt: the same state, not paused, then the job.
        let queued = spec.loader.admission?.mustWait() ?? false
        var next = state
        next.isPaused = false
        next.isQueued = queued
        emit(.state, next, changed: false)
        startAttempt(spec, shownQueued: queued)
    }

    /// Refreshes silently when the last load asked to on returning to the
    /// foreground, the cell shows a loaded value older than the load's
    /// fresh time, no load runs, and the last such refresh is older than
    /// the load's throttle.
    func foregrounded(nowMs: UInt64) {
        guard !isFreed, flavor == .loadable, session == nil, let options = lastSpec?.options,
              options.refreshesOnForeground, state.status == .loaded, !state.isPartial else { return }
        let age = nowMs >= state.updatedAt ? nowMs - state.updatedAt : 0
        guard options.freshMs == 0 || age >= UInt64(options.freshMs) else { return }
        let throttle = UInt64(options.foregroundThrottleMs == 0 ? 5000 : options.foregroundThrottleMs)
        guard foregroundRefreshAtMs == 0 || nowMs < foregroundRefreshAtMs
              || nowMs - foregroundRefreshAtMs >= throttle else { return }
        foregroundRefreshAtMs = nowMs
        let failures = pollFailures
        reload(ticket: 0)
        pollFailures = failures
    }
}

extension Cell: PollTarget {
    func pollResumed() {
        pollParked = false
        pollDue()
    }
}

