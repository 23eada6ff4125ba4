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
    let observer: CellObserver<Value, Request>
    private let freed = Atomic<Bool>(false)
    /// Whether the cell emits PROGRESS events (set from any thread).
    let reportsProgress = Atomic<Bool>(true)
    /// The host's name for the cell (see `HandleName`), or nil. Set before
    /// the cell is inserted in the runtime's table, never after.
    @exclusivity(unchecked) @usableFromInline package var name: String?
    /// Loop thread: the cell's last state events, kept while an inspector
    /// runs (nil until then).
    var inspectorHistory: CellHistory?

    // Written on the loop thread under the table lock.
    @exclusivity(unchecked) var published: CellEvent<Value, Request>

    // Guarded by the table lock: what callers on other threads check.
    /// The job the cell waits for, as seen from other threads.
    @exclusivity(unchecked) var currentJob: Job<Value, Request>?
    @exclusivity(unchecked) var lastLoaderID: UInt64 = 0
    /// How many operations that end the cell's load (cancel, reset, load,
    /// set_*, free) were asked for.
    @exclusivity(unchecked) var leaveRequests: UInt32 = 0

    // Loop thread only.
    @exclusivity(unchecked) var loads: UInt32 = 0
    /// Counts lookups in a remote cache (see `load`) and the operations that
    /// end them: a lookup's answer starts its load only if none came since.
    @exclusivity(unchecked) var lookups: UInt32 = 0
    @exclusivity(unchecked) var session: Session?
    /// The spec of the last load started: the running one, or what `refresh` reloads.
    @exclusivity(unchecked) var lastSpec: LoadSpec<Value, Request>?
    @exclusivity(unchecked) var timers: LoadTimers?
    @exclusivity(unchecked) var rng = SystemRandomNumberGenerator()
    /// Polls that failed in a row (see `pollAfterLoad`).
    @exclusivity(unchecked) var pollFailures: UInt32 = 0
    /// The cell waits in the runtime's `PollControl` for polling to resume.
    @exclusivity(unchecked) var pollParked = false
    /// The load's current attempt waits in the runtime's `HostSignals` to be online.
    @exclusivity(unchecked) var pausedOffline = false
    /// When the cell last refreshed on returning to the foreground (wall ms).
    @exclusivity(unchecked) var foregroundRefreshAtMs: UInt64 = 0
    /// The cell runs a prefetch (`Runtime.prefetch`): its jobs take loads
    /// of their key that do not ask to share.
    @exclusivity(unchecked) var isPrefetch = false
    /// The memory cache entry the cell observes (see `observeCacheEntry`).
    @exclusivity(unchecked) var observedEntry: ObservedEntry?
    /// `publishAdmission` published an event that `deliverAdmission` has
    /// not reported yet.
    @exclusivity(unchecked) var admissionUndelivered = false
    /// The write whose optimistic values the process run under way shows
    /// (see `MutationRun`); it ends with the run's session.
    @exclusivity(unchecked) var mutation: MutationRun?

    // Guarded by the table lock.
    /// Set when the cell asked to leave a job other cells also wait for:
    /// how many of its operations were accepted then (the cell gets no later one).
    @exclusivity(unchecked) var leaveMark: UInt32?
    /// `leaveRequests` when the queued cancel or reset that has not run yet
    /// was asked for (0: none queued), and whether it is a reset.
    @exclusivity(unchecked) var queuedStop: UInt32 = 0
    @exclusivity(unchecked) var queuedStopResets = false
    @exclusivity(unchecked) var loadRequested = false

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

    /// The priority of the load under way (`Int32.min` without one), for
    /// the job it waits for.
    var waitingPriority: Int32 { session?.priority ?? Int32.min }

    /// The number of the load under way (see `CellEvent.load`), if any.
    @usableFromInline package var currentLoad: UInt64? { session.map { UInt64($0.serial) } }

    /// Loop thread: the request of the load under way, if one is.
    package var currentRequest: Request? { session == nil ? nil : lastSpec?.request }
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
