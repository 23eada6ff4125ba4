import CLibUV

/// One run of a loader, on behalf of one or more cells (loads that share a
/// key share a job).
///
/// Lifecycle: created on the loop thread by a load and inserted in the
/// handle table; `running` until a terminal operation is accepted
/// (`ending`) or it is cancelled; then out of the table (`ended`).
/// Operations from any thread go through `Runtime.submit`, which checks
/// the phase and appends to the inbox under the table lock; the loop
/// applies the inbox in order to every waiting cell (`settle`). A cell that
/// leaves first applies what the inbox holds, so every operation that was
/// accepted takes effect before the leave; the job is cancelled only when
/// its last waiting cell leaves.
@_spi(LoadstateC) public final class Job<Value, Request>: Handle, @unchecked Sendable {
    /// `cancelling`: the only cell waiting for the job asked to leave it (a
    /// cancel, reset, new load... called but not yet run on the loop); the
    /// job takes no more operations.
    @usableFromInline package enum Phase { case running, cancelling, ending, ended }

    /// Where the job stands with its loader's admission (`Loader.admission`):
    /// `unlimited` (the loader has none), `waiting` in its queue, `counted`
    /// as running, or `dropped` (it was let through after its cells had
    /// left: it never starts).
    enum AdmissionPhase: UInt8 { case unlimited, waiting, counted, dropped }

    // Stored properties are laid out in this order: pointers first, small
    // fields last, so that the many jobs of a busy runtime stay small.
    // Variables: `@exclusivity(unchecked)`, as the cell's (see `Cell`).

    // Loop thread only.
    unowned(unsafe) let runtime: Runtime
    @usableFromInline package let loader: Loader<Value, Request>
    @usableFromInline package let request: Request
    /// The cells waiting for this job, in the order they joined.
    @exclusivity(unchecked) var waiters: Waiters<Cell<Value, Request>>

    // Guarded by the table lock.
    @exclusivity(unchecked) var inbox = Inbox<JobOperation<Value>>()
    @exclusivity(unchecked) var cancelHooks: [() -> Void] = []

    // Loop thread only.
    /// Called on the loop thread, once, when the job is cancelled (from
    /// outside or inside, superseded, timed out, its cells or runtime
    /// freed); not when it ends by succeed, finish or fail. For loaders
    /// that work on the loop itself; hosts use `Runtime.onCancel`.
    @exclusivity(unchecked) @usableFromInline package var onLoopCancel: (() -> Void)?
    /// What only shared or cached jobs need.
    private let extras: Extras?

    // Guarded by the table lock.
    /// How many cells wait for the job (as `waiters`, for other threads).
    @exclusivity(unchecked) var waiterCount: UInt32 = 1
    /// How many of them asked to leave (their leave is not yet run).
    @exclusivity(unchecked) var pendingLeaves: UInt32 = 0
    /// How many operations were accepted; they are delivered in this order.
    @exclusivity(unchecked) var accepted: UInt32 = 0

    // Loop thread only.
    /// How many operations were delivered.
    @exclusivity(unchecked) private var delivered: UInt32 = 0
    /// 1 for the first try, 2 for the first retry, ...
    @usableFromInline package let attempt: UInt32
    /// The highest priority of its waiting cells' loads.
    @exclusivity(unchecked) var priority: Int32 = 0
    /// The ticket of its entry in the admission's queue while it waits.
    @exclusivity(unchecked) var admissionTicket: UInt64 = 0
    @exclusivity(unchecked) var admissionPhase = AdmissionPhase.unlimited

    // Guarded by the table lock.
    @exclusivity(unchecked) var phase: Phase = .running
    @exclusivity(unchecked) var drainScheduled = false

    // Loop thread only.
    /// Whether the job yielded a value.
    @exclusivity(unchecked) var yielded = false
    /// Set while its loader's `start` runs: operations submitted from
    /// there are applied when `start` returns (`settleAfterStart`).
    @exclusivity(unchecked) var isStarting = false
    /// An operation was submitted from inside `start`.
    @exclusivity(unchecked) var settleAfterStart = false
    @exclusivity(unchecked) private var finished = false
    /// The runtime observer that saw the job start (see `RuntimeObserver`).
    @exclusivity(unchecked) weak var observer: RuntimeObserver?
    /// `queuedAtNs` until the job is admitted, then `observedStartNs`: one
    /// field for both, as the first is read (at admission) before the
    /// second is written (at the start), so that jobs stay small.
    @exclusivity(unchecked) private var stampNs: UInt64 = 0
    /// When a loader's limits queued it (`uv_hrtime`; 0: not queued, or
    /// metrics off); read and cleared when it is admitted.
    var queuedAtNs: UInt64 {
        get { stampNs }
        set { stampNs = newValue }
    }
    /// When the runtime observer saw it start (`uv_hrtime`), once it started.
    var observedStartNs: UInt64 {
        get { stampNs }
        set { stampNs = newValue }
    }
    /// When it started, on the loop's clock (`uv_now`), for the inspector.
    let startedAtMs: UInt64

    /// The key and cache of a shared or cached job, and the last value it
    /// yielded (stored in the cache when it finishes).
    private final class Extras {
        let shareKey: ShareKey?
        let cache: CacheUse<Value>?
        var lastYield: Value?
        var cacheWrite: CacheWrite?
        /// The fencing token of the Redis lease this job holds (0: none).
        var leaseToken: UInt64 = 0
        /// The job ends with another process's result: nothing to store.
        var endsWithStoredResult = false
        /// The job was started by a prefetch: loads of its key join it
        /// even without asking to share.
        let isPrefetch: Bool

        init(shareKey: ShareKey?, cache: CacheUse<Value>?, isPrefetch: Bool) {
            self.shareKey = shareKey
            self.cache = cache
            self.isPrefetch = isPrefetch
        }
    }

    /// The key loads share this job by, if any.
    var shareKey: ShareKey? { extras?.shareKey }

    /// Whether a prefetch started the job.
    var isPrefetch: Bool { extras?.isPrefetch ?? false }

    /// Whether the job waits for its loader's admission.
    var isWaiting: Bool { admissionPhase == .waiting }

    /// The cache the job's result goes into, if any (its loader may read
    /// the entry there, to revalidate it).
    package var cache: CacheUse<Value>? { extras?.cache }

    /// Loop thread: what the loader says about the value it ends the job
    /// with (see `CacheWrite`); set before the job succeeds. Ignored by a
    /// job without a cache.
    package var cacheWrite: CacheWrite? {
        get { extras?.cacheWrite }
        set { extras?.cacheWrite = newValue }
    }

    init(id: UInt64, runtime: Runtime, cell: Cell<Value, Request>, loader: Loader<Value, Request>,
         request: Request, attempt: UInt32, shareKey: ShareKey?, cache: CacheUse<Value>?, isPrefetch: Bool = false) {
        self.runtime = runtime
        waiters = Waiters(cell)
        self.loader = loader
        self.request = request
        self.attempt = attempt
        extras = shareKey == nil && cache == nil ? nil
            : Extras(shareKey: shareKey, cache: cache, isPrefetch: isPrefetch)
        startedAtMs = uv_now(runtime.loop.loop)
        super.init(id: id)
    }

    /// Loop: calls the loader's `start`; operations submitted from inside
    /// it are applied when it returns.
    func begin() {
        if queuedAtNs != 0 { runtime.noteAdmitted(self) }
        runtime.observeJobStart(self)
        // A shared job with a Redis cache runs its loader only in the
        // process that holds the key's lease (see `leaseDecided`).
        if let extras, extras.shareKey != nil, let cache = extras.cache, let redis = cache.store as? RedisCache {
            let now = Clock.wallMs()
            // An entry stored since the job began is its result; so is one
            // that the load's fresh time accepts.
            var notBefore = now
            if cache.policy != .loadOnly, cache.freshMs > 0 { notBefore = now > cache.freshMs ? now - cache.freshMs : 0 }
            if cache.afterInvalidation { notBefore = 0 }
            redis.acquire(cache.key, notBeforeMs: notBefore) { [self] outcome in
                leaseDecided(outcome, redis: redis, cache: cache)
            }
            return
        }
        startLoader()
    }

    /// Loop: the lease request of a shared job with a Redis cache ended.
    private func leaseDecided(_ outcome: RedisCache.LeaseOutcome, redis: RedisCache, cache: CacheUse<Value>) {
        guard !finished, let extras else {
            // The job ended while it waited: the lease goes back at once.
            if case .lease(let token, _) = outcome { redis.release(cache.key, token: token) }
            return
        }
        switch outcome {
        case .lease(let token, let current):
            extras.leaseToken = token
            redis.withFetched(cache.key, current, failure: nil) { startLoader() }
        case .value(let entry):
            guard let value = cache.decode(entry.value) else { return startLoader() }
            extras.endsWithStoredResult = true
            succeedOnLoop(value)
        case .unavailable:
            startLoader()
        case .abandoned:
            break
        }
    }

    /// Loop: ends the job with `value`, as `Runtime.submit` of a succeed
    /// does, for a result the job found itself (another process's). Not
    /// through `submit`: its exported specialization is not emitted for
    /// callers inside the module built with cross-module optimization.
    private func succeedOnLoop(_ value: Value) {
        let schedule = runtime.table.withLock { storage -> Bool in
            guard phase == .running else { return false }
            phase = .ending
            storage.handles[id] = nil
            inbox.append(.succeed(value))
            accepted += 1
            guard !drainScheduled else { return false }
            drainScheduled = true
            return true
        }
        if schedule { runtime.loop.afterCurrent { [self] in settle() } }
    }

    /// Loop: calls the loader's `start`.
    private func startLoader() {
        isStarting = true
        loader.start(self, runtime: runtime)
        isStarting = false
        if settleAfterStart {
            settleAfterStart = false
            settle()
        }
    }

    /// Loop: the job's priority is the highest of its waiting cells'; a
    /// waiting job moves in the queue when it changes.
    func updatePriority() {
        var highest = Int32.min
        waiters.forEach { highest = max(highest, $0.waitingPriority) }
        guard highest != priority else { return }
        priority = highest
        if admissionPhase == .waiting, let admission = loader.admission {
            admission.remove()
            admissionTicket = admission.enqueue(priority: highest, admissionStart())
        }
    }

    /// Loop: applies the operations queued in the inbox to every waiting cell.
    func settle() {
        let (ops, leaving) = runtime.table.withLock { _ -> (Inbox<JobOperation<Value>>, [ObjectIdentifier: UInt32]?) in
            drainScheduled = false
            // Cells that asked to leave get only what was accepted before.
            guard pendingLeaves > 0 else { return (inbox.takeAll(), nil) }
            var leaving: [ObjectIdentifier: UInt32] = [:]
            waiters.forEach { cell in
                if let mark = cell.leaveMark { leaving[ObjectIdentifier(cell)] = mark }
            }
            return (inbox.takeAll(), leaving)
        }
        ops.forEach { op in
            delivered += 1
            deliver(op, number: delivered, leaving: leaving)
        }
        // The inbox's storage is kept for the loader's next job (only
        // `Runtime.submit` on the loop thread takes it).
        if loader.spareInbox == nil {
            var spent = consume ops
            guard spent.hasStorage else { return }
            spent.clear()
            loader.spareInbox = spent
        }
    }

    /// `leaving`: the marks of cells that asked to leave, if any did.
    private func deliver(_ op: JobOperation<Value>, number: UInt32, leaving: [ObjectIdentifier: UInt32]?) {
        guard !finished else { return }
        if let extras, let cache = extras.cache {
            // A result stored under a key is newer data than a write's optimistic value there.
            var stores = false
            if case .succeed = op { stores = true } else if case .finish = op { stores = extras.lastYield != nil }
            defer { if stores { runtime.optimisticLedger.newerData(cache.store, key: cache.key) } }
            // Stored once for all the cells waiting, before they show it.
            switch op {
            case .yield(let value): extras.lastYield = value
            case .succeed(let value) where !extras.endsWithStoredResult:
                cache.store(value, write: extras.cacheWrite, lease: extras.leaseToken)
                extras.leaseToken = 0
            case .fail(let error, _) where extras.leaseToken == 0 && !extras.endsWithStoredResult:
                // A failure its loader describes (an HTTP 404 that may be
                // reused, a POST's invalidations): the failure's value.
                if let write = extras.cacheWrite {
                    cache.apply(write, value: write.storedValue
                                ?? ((error.underlying as? any ErrorWithValue)?.failureValue as? Value).map(cache.encode))
                }
            case .finish:
                if let lastYield = extras.lastYield {
                    cache.store(lastYield, lease: extras.leaseToken)
                    extras.leaseToken = 0
                }
            default: break
            }
        }
        if case .yield = op { yielded = true }
        // A terminal operation ends the wait of every cell: moved out.
        let cells = op.isTerminal ? waiters.takeAll() : waiters
        if op.isTerminal {
            let hooks = runtime.table.withLock { _ -> [() -> Void] in
                phase = .ended
                // The waiting cells no longer wait, as seen from other threads too.
                cells.forEach { $0.clearCurrentJobLocked() }
                defer { cancelHooks = [] }
                return cancelHooks
            }
            finish()
            runtime.observeJobEnd(self, JobEnd(op))
            switch op {
            case .cancelSelf, .resetSelf: runCancelHooks(hooks)
            default: onLoopCancel = nil
            }
        }
        cells.forEach { cell in
            if let mark = leaving?[ObjectIdentifier(cell)], number > mark { return }
            cell.apply(op, from: self)
        }
    }

    /// Loop: `cell` stops waiting. Operations accepted before are applied
    /// first (they may end the job); the last cell to leave cancels it.
    func leave(_ cell: Cell<Value, Request>) {
        while !finished, waiters.contains(cell) {
            settle()
            guard !finished, waiters.contains(cell) else { return }
            if waiters.count > 1 {
                waiters.remove(cell)
                if admissionPhase == .waiting { updatePriority() }
                runtime.table.withLock { _ in
                    waiterCount -= 1
                    if cell.leaveMark != nil {
                        pendingLeaves -= 1
                        cell.leaveMark = nil
                    }
                }
                return
            }
            let hooks = runtime.table.withLock { storage -> [() -> Void]? in
                guard inbox.isEmpty, phase == .running || phase == .cancelling else { return nil }
                phase = .ended
                storage.handles[id] = nil
                defer { cancelHooks = [] }
                return cancelHooks
            }
            if let hooks {
                waiters.removeAll()
                finish()
                runtime.observeJobEnd(self, .cancelled)
                runCancelHooks(hooks)
                return
            }
            // An operation arrived meanwhile: apply it, then try again.
        }
    }

    /// The job ended: it no longer takes cells, and its loader may be released.
    private func finish() {
        finished = true
        if let extras, extras.leaseToken != 0, let cache = extras.cache, let redis = cache.store as? RedisCache {
            // Failed or cancelled: the waiting processes ask for the lease again.
            redis.release(cache.key, token: extras.leaseToken)
            extras.leaseToken = 0
        }
        if let shareKey { runtime.unshare(shareKey, job: self) }
        switch admissionPhase {
        case .waiting:
            admissionTicket = 0
            loader.admission?.remove()
        case .counted: loader.admission?.ended()
        case .unlimited, .dropped: break
        }
        admissionPhase = .unlimited
        loader.jobEnded(runtime: runtime)
    }

    private func runCancelHooks(_ hooks: [() -> Void]) {
        if let hook = onLoopCancel {
            onLoopCancel = nil
            hook()
        }
        for hook in hooks { runtime.deliver(.cleanup, hook) }
    }

    /// Loop: whether a new load with the same key may wait for this job
    /// (it must also still be `running`, checked under the table lock).
    var acceptsWaiters: Bool { !finished }
}

extension Job {
    /// What the loader's admission holds while the job waits (see
    /// `Admission.Start`); made where the job's types are known.
    func admissionStart() -> Admission.Start {
        { [self] ticket, call in
            guard admissionTicket == ticket else { return nil }
            switch call {
            case .probe:
                return true
            case .start:
                return admitted()
            case .inspect(let sink):
                guard loader.id == sink.loader else { return false }
                if sink.wants { sink.inspection = inspection(nowMs: sink.nowMs) }
                return true
            }
        }
    }

    /// Loop: the loader's admission lets the job start (see
    /// `Admission.Start`): unless every cell waiting for it is leaving, it
    /// becomes visible to job calls, its cells show that it runs, and the
    /// loader starts it.
    func admitted() -> Bool {
        admissionTicket = 0
        let starts = runtime.table.withLock { storage -> Bool in
            guard phase == .running else { return false }
            storage.handles[id] = self
            waiters.forEach { $0.publishAdmission(self) }
            return true
        }
        guard starts else {
            admissionPhase = .dropped
            return false
        }
        admissionPhase = .counted
        waiters.forEach { $0.deliverAdmission() }
        begin()
        return true
    }
}

/// What loads share a job by: the loader and a key (the cache key, or the
/// request when there is none).
@usableFromInline package struct ShareKey: Hashable, Sendable {
    @usableFromInline package let loader: UInt64
    @usableFromInline package let key: [UInt8]

    @usableFromInline package init(loader: UInt64, key: [UInt8]) {
        self.loader = loader
        self.key = key
    }
}
