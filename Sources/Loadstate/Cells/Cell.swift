import CLibUV
import Synchronization

/// Something the runtime must shut down when it closes.
protocol RuntimeResident: AnyObject {
    func shutdown(runtime: Runtime)
}

/// A cell: one state machine, loadable or process, fed by jobs.
///
/// Lifecycle: created on any thread and inserted in the runtime's table;
/// its operations run on the loop thread (`load`, `cancel`, `reset`,
/// `setLoaded`, `setError`, `free`); it reports every event to `observer`
/// on the loop thread, with itself (so observers need not keep the cell). `markFreed` (any thread) stops all later events at
/// once; `free` (loop) then cancels the running job.
///
/// One load is a *session*: its spec, the state to restore if it is
/// cancelled, its timers, and the job of its current attempt (nil during a
/// retry back-off).
public final class Cell<Value, Request>: Handle, @unchecked Sendable {
    struct Session {
        var spec: LoadSpec<Value, Request>
        /// The state before the load (or before the first of a chain of
        /// superseding loads), restored by a cancel.
        var restore: CellState<Value, Request>
        var startedAtNs: UInt64
        var attempt: UInt32
        var job: Job<Value, Request>?
        var nextInterrupt: Int
        var interruptDueMs: UInt64
        var serial: UInt64
    }

    public let flavor: CellFlavor
    unowned(unsafe) let runtime: Runtime
    private let observer: (Cell, CellEvent<Value, Request>) -> Void
    private let freed = Atomic<Bool>(false)

    // Guarded by the table lock.
    var published: CellEvent<Value, Request>
    /// The last load's spec, for refresh; set when the load is called.
    var lastSpec: LoadSpec<Value, Request>?

    // Loop thread only.
    public private(set) var state: CellState<Value, Request>
    private var seq: UInt64 = 0
    private var loads: UInt64 = 0
    private var session: Session?
    private var timeoutTimer: LoopTimer?
    private var interruptTimer: LoopTimer?
    private var retryTimer: LoopTimer?
    private var rng = SystemRandomNumberGenerator()

    public init(id: UInt64, flavor: CellFlavor, runtime: Runtime,
                observer: @escaping (Cell, CellEvent<Value, Request>) -> Void) {
        self.flavor = flavor
        self.runtime = runtime
        self.observer = observer
        let initial = CellState<Value, Request>.initial(at: Clock.wallMs())
        state = initial
        published = CellEvent(type: .state, cell: id, seq: 0, load: 0, state: initial, stateChanged: true,
                              isCancelled: false,
                              elapsedMs: 0, progressDone: 0, progressTotal: 0)
        super.init(id: id)
    }

    /// Whether the cell was freed; a freed cell emits nothing.
    public var isFreed: Bool { freed.load(ordering: .acquiring) }

    /// Any thread: no event of the cell is reported after this returns
    /// (apart from one already being reported on another thread).
    public func markFreed() {
        freed.store(true, ordering: .releasing)
    }

    /// The cell's latest event (seq 0 before the first); any thread.
    public var latestEvent: CellEvent<Value, Request> {
        runtime.table.withLock { _ in published }
    }

    /// The spec `refresh` reloads; any thread.
    public var rememberedSpec: LoadSpec<Value, Request>? {
        get { runtime.table.withLock { _ in lastSpec } }
        set { runtime.table.withLock { _ in lastSpec = newValue } }
    }

    /// Whether a load (a job or a retry back-off) is under way.
    public var isBusy: Bool { session != nil }

    // MARK: - Operations (loop thread)

    /// Starts a load: cancels the running one, emits loading (or the
    /// current state flagged refreshing when silent) and starts a job.
    public func load(_ spec: LoadSpec<Value, Request>) {
        guard !isFreed else { return }
        let restore = abandonSession() ?? state
        loads += 1
        session = Session(spec: spec, restore: restore, startedAtNs: uv_hrtime(), attempt: 1, job: nil,
                          nextInterrupt: 0, interruptDueMs: 0, serial: loads)
        if spec.options.silent {
            state.isRefreshing = true
            state.attempt = 1
            emit(.state, changed: false)
        } else {
            state = CellState(status: .loading, kind: spec.kind, value: nil, error: nil, request: spec.request,
                              isPartial: false, isRefreshing: false, attempt: 1, updatedAt: Clock.wallMs())
            emit(.state)
        }
        armTimers(spec.options)
        startAttempt()
    }

    /// Cancels the running load: the state before it comes back, flagged cancelled.
    public func cancel() {
        guard !isFreed, let restore = abandonSession() else { return }
        state = restore
        state.isRefreshing = false
        emit(.state, cancelled: true)
    }

    /// Cancels the running load and makes the cell absent.
    public func reset() {
        guard !isFreed else { return }
        let hadSession = abandonSession() != nil
        if !hadSession && state.status == .absent && !state.isRefreshing { return }
        state = .initial(at: Clock.wallMs())
        emit(.state)
    }

    /// Cancels the running load and sets a value.
    public func setLoaded(_ value: Value) {
        guard !isFreed else { return }
        abandonSession()
        state = CellState(status: .loaded, kind: 0, value: value, error: nil, request: nil,
                          isPartial: false, isRefreshing: false, attempt: 0, updatedAt: Clock.wallMs())
        emit(.state)
    }

    /// Cancels the running load and sets an error.
    public func setError(_ error: LoadError) {
        guard !isFreed else { return }
        abandonSession()
        state = CellState(status: .error, kind: state.kind, value: nil, error: error, request: nil,
                          isPartial: false, isRefreshing: false, attempt: 0, updatedAt: Clock.wallMs())
        emit(.state)
    }

    /// Fails the load numbered `serial` (see `CellEvent.load`) if it still
    /// runs: its job is cancelled and the cell shows `error`.
    public func failLoad(_ serial: UInt64, with error: LoadError) {
        guard !isFreed, let s = session, s.serial == serial else { return }
        if let job = s.job {
            cancelJob(job)
            guard session?.serial == serial else { return }
        }
        endSession()
        state = CellState(status: .error, kind: s.spec.kind, value: nil, error: error, request: s.spec.request,
                          isPartial: false, isRefreshing: false, attempt: s.attempt, updatedAt: Clock.wallMs())
        emit(.state)
    }

    /// Ends the cell: cancels its job, closes its timers. Call `markFreed` first.
    public func free() {
        abandonSession()
        timeoutTimer?.close()
        interruptTimer?.close()
        retryTimer?.close()
        timeoutTimer = nil
        interruptTimer = nil
        retryTimer = nil
    }

    /// Applies the operations queued in the job's inbox.
    func settle(_ job: Job<Value, Request>) {
        let ops = runtime.table.withLock { _ -> [JobOperation<Value>] in
            let ops = job.inbox
            job.inbox = []
            job.drainScheduled = false
            return ops
        }
        for op in ops { apply(op, from: job) }
    }

    // MARK: - Sessions and jobs

    private func startAttempt() {
        guard let s = session else { return }
        let job = Job(id: runtime.table.makeID(.job), cell: self, loader: s.spec.loader,
                      request: s.spec.request, attempt: s.attempt)
        runtime.table.insert(job)
        session!.job = job
        s.spec.loader.jobStarted()
        s.spec.loader.start(job, runtime: runtime)
    }

    /// Ends the current session without an event: first applies what its
    /// job already reported, then cancels the job if it still runs. Returns
    /// the state to restore if a session was still under way.
    @discardableResult
    private func abandonSession() -> CellState<Value, Request>? {
        if let job = session?.job {
            cancelJob(job)
        }
        guard let s = session else { return nil }
        endSession()
        return s.restore
    }

    /// Cancels a job unless an operation it already reported ends it;
    /// operations accepted before the cancel are applied first.
    private func cancelJob(_ job: Job<Value, Request>) {
        while true {
            let (ops, hooks, cancelled) = runtime.table.withLock { storage -> ([JobOperation<Value>], [() -> Void], Bool) in
                if job.inbox.isEmpty {
                    guard job.phase == .running else { return ([], [], false) }
                    job.phase = .ended
                    storage.handles[job.id] = nil
                    let hooks = job.cancelHooks
                    job.cancelHooks = []
                    return ([], hooks, true)
                }
                let ops = job.inbox
                job.inbox = []
                return (ops, [], false)
            }
            if cancelled {
                detach(job)
                runCancelHooks(job, hooks)
                return
            }
            if ops.isEmpty { return }
            for op in ops { apply(op, from: job) }
            if session?.job !== job { return }
        }
    }

    /// Forgets a job that ended, whatever the reason.
    private func detach(_ job: Job<Value, Request>) {
        guard job.cell != nil else { return }
        job.cell = nil
        if session?.job === job { session!.job = nil }
        job.loader.jobEnded(runtime: runtime)
    }

    /// Ends a job that reported a terminal operation (already out of the table).
    private func endJob(_ job: Job<Value, Request>, runHooks: Bool) {
        let hooks = runtime.table.withLock { _ -> [() -> Void] in
            job.phase = .ended
            let hooks = job.cancelHooks
            job.cancelHooks = []
            return hooks
        }
        detach(job)
        if runHooks {
            runCancelHooks(job, hooks)
        } else {
            job.onLoopCancel = nil
        }
    }

    private func runCancelHooks(_ job: Job<Value, Request>, _ hooks: [() -> Void]) {
        if let hook = job.onLoopCancel {
            job.onLoopCancel = nil
            hook()
        }
        for hook in hooks { runtime.deliver(.cleanup, hook) }
    }

    private func endSession() {
        session = nil
        timeoutTimer?.stop()
        interruptTimer?.stop()
        retryTimer?.stop()
    }

    private func apply(_ op: JobOperation<Value>, from job: Job<Value, Request>) {
        guard let s = session, s.job === job, !isFreed else { return }
        let request = s.spec.request
        switch op {
        case .yield(let value):
            job.yielded = true
            guard flavor == .loadable else { return }
            state.status = .loaded
            state.value = value
            state.error = nil
            state.request = request
            state.isPartial = true
            state.attempt = s.attempt
            state.updatedAt = Clock.wallMs()
            emit(.state)
        case .progress(let done, let total):
            emit(.progress, progress: (done, total))
        case .succeed(let value):
            endJob(job, runHooks: false)
            endSession()
            state = CellState(status: .loaded, kind: s.spec.kind, value: flavor == .loadable ? value : nil,
                              error: nil, request: request, isPartial: false, isRefreshing: false,
                              attempt: s.attempt, updatedAt: Clock.wallMs())
            emit(.state)
        case .finish:
            endJob(job, runHooks: false)
            endSession()
            if flavor == .process {
                state = CellState(status: .loaded, kind: s.spec.kind, value: nil, error: nil, request: request,
                                  isPartial: false, isRefreshing: false, attempt: s.attempt,
                                  updatedAt: Clock.wallMs())
            } else if job.yielded {
                state.isPartial = false
                state.isRefreshing = false
            } else {
                state = s.restore
                state.isRefreshing = false
            }
            emit(.state)
        case .fail(let error, let retry):
            endJob(job, runHooks: false)
            if retry != .never && s.attempt <= s.spec.options.retries {
                if case .after(let ms) = retry {
                    scheduleRetry(afterMs: ms)
                } else {
                    scheduleRetry(afterMs: nil)
                }
                return
            }
            endSession()
            state = CellState(status: .error, kind: s.spec.kind, value: nil, error: error, request: request,
                              isPartial: false, isRefreshing: false, attempt: s.attempt,
                              updatedAt: Clock.wallMs())
            emit(.state)
        case .cancelSelf:
            endJob(job, runHooks: true)
            endSession()
            state = s.restore
            state.isRefreshing = false
            emit(.state, cancelled: true)
        case .resetSelf:
            endJob(job, runHooks: true)
            endSession()
            state = .initial(at: Clock.wallMs())
            emit(.state)
        }
    }

    // MARK: - Timers

    private func timer(_ slot: inout LoopTimer?) -> LoopTimer {
        if let t = slot { return t }
        let t = LoopTimer(loop: runtime.loop.loop)
        slot = t
        return t
    }

    private func armTimers(_ options: LoadOptions) {
        if options.timeoutMs > 0 {
            timer(&timeoutTimer).start(after: UInt64(options.timeoutMs)) { [unowned self] in timedOut() }
        }
        if !options.interruptsMs.isEmpty {
            armNextInterrupt()
        }
    }

    private func armNextInterrupt() {
        guard var s = session, s.nextInterrupt < s.spec.options.interruptsMs.count else { return }
        s.interruptDueMs += UInt64(s.spec.options.interruptsMs[s.nextInterrupt])
        s.nextInterrupt += 1
        session = s
        armInterruptTimer(due: s.interruptDueMs, startedAtNs: s.startedAtNs)
    }

    private func armInterruptTimer(due: UInt64, startedAtNs: UInt64) {
        let elapsedNs = uv_hrtime() - startedAtNs
        let dueNs = due * 1_000_000
        let wait = dueNs > elapsedNs ? (dueNs - elapsedNs + 999_999) / 1_000_000 : 0
        timer(&interruptTimer).start(after: wait) { [unowned self] in interrupted() }
    }

    private func interrupted() {
        guard let s = session, !isFreed else { return }
        let elapsedNs = uv_hrtime() - s.startedAtNs
        // libuv timers have millisecond granularity: never report early.
        if elapsedNs < s.interruptDueMs * 1_000_000 {
            armInterruptTimer(due: s.interruptDueMs, startedAtNs: s.startedAtNs)
            return
        }
        emit(.interrupt, elapsedMs: elapsedNs / 1_000_000)
        armNextInterrupt()
    }

    private func timedOut() {
        guard let s = session else { return }
        // libuv timers have millisecond granularity: never time out early.
        let elapsedNs = uv_hrtime() - s.startedAtNs
        let dueNs = UInt64(s.spec.options.timeoutMs) * 1_000_000
        if elapsedNs < dueNs {
            let wait = (dueNs - elapsedNs + 999_999) / 1_000_000
            timer(&timeoutTimer).start(after: wait) { [unowned self] in timedOut() }
            return
        }
        failLoad(s.serial, with: LoadError(.timedOut, underlying: TimeoutError()))
    }

    /// Waits before the next attempt: `afterMs` when the failure said how
    /// long, otherwise a random time up to base × 2^(attempt-1) ("full
    /// jitter"); never more than the maximum back-off.
    private func scheduleRetry(afterMs: UInt64?) {
        guard var s = session else { return }
        let options = s.spec.options
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
        timer(&retryTimer).start(after: delay) { [unowned self] in retry() }
    }

    private func retry() {
        guard let s = session, s.job == nil, !isFreed else { return }
        state.attempt = s.attempt
        emit(.state, changed: !s.spec.options.silent)
        startAttempt()
    }

    /// The number of the load under way (see `CellEvent.load`), if any.
    public var currentLoad: UInt64? { session?.serial }

    // MARK: - Events

    private func emit(_ type: EventType, changed: Bool = true, cancelled: Bool = false, elapsedMs: UInt64 = 0,
                      progress: (UInt64, UInt64) = (0, 0)) {
        seq += 1
        let event = CellEvent(type: type, cell: id, seq: seq, load: session?.serial ?? 0, state: state,
                              stateChanged: changed && type == .state, isCancelled: cancelled,
                              elapsedMs: elapsedMs, progressDone: progress.0, progressTotal: progress.1)
        runtime.table.withLock { _ in published = event }
        if !isFreed { observer(self, event) }
    }
}

extension Cell: RuntimeResident {
    func shutdown(runtime: Runtime) {
        markFreed()
        free()
    }
}

extension Loader: RuntimeResident {
    func shutdown(runtime: Runtime) {
        releaseNow(runtime: runtime)
    }
}
