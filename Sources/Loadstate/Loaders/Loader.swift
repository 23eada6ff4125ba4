/// Something that performs jobs: a host callback, a Swift closure, a file
/// read. Subclasses override `start`.
///
/// Lifecycle: created, inserted in the runtime's table, used by any number
/// of loads; `retire` (on the loop) removes it from use; `released` runs on
/// the loop once it is retired and its last job has ended.
@_spi(LoadstateC) open class Loader<Value, Request>: Handle, @unchecked Sendable {
    // Loop thread only; `@exclusivity(unchecked)` as the cell's state (see `Cell`).
    @exclusivity(unchecked) private var activeJobs = 0
    @exclusivity(unchecked) private var retired = false
    @exclusivity(unchecked) private var isReleased = false
    /// The storage of a settled job's inbox, for the next job's operations
    /// submitted on the loop thread (a job completed in its start).
    @exclusivity(unchecked) var spareInbox: Inbox<JobOperation<Value>>?
    /// What holds the loader's jobs to its limits; nil: no limit.
    /// Set before the loader is used.
    private(set) var admission: Admission?
    private var ownsAdmission = false
    /// The loader's load and job counters (see `RuntimeMetrics`).
    @usableFromInline package let metrics = LoadMetrics()
    /// The host's name for the loader (see `HandleName`), or nil. Set
    /// before the loader is inserted in the runtime's table, never after:
    /// any thread reads it then.
    @usableFromInline package var name: String?

    @usableFromInline package override init(id: UInt64) {
        super.init(id: id)
    }

    deinit {
        metrics.deallocate()
    }

    /// Holds the loader's jobs to `limits` (none when unlimited). Call
    /// before the loader is used.
    @usableFromInline package func limit(_ limits: LoaderLimits, loop: EventLoop) {
        admission = limits.isUnlimited ? nil : Admission(limits: limits, loop: loop)
        ownsAdmission = true
    }

    /// Holds the loader's jobs to an admission shared with other loaders.
    /// Call before the loader is used.
    func share(_ admission: Admission) {
        self.admission = admission
        ownsAdmission = false
    }

    /// Begins the work of `job`. Runs on the loop thread; must not block.
    /// The work reports back through `Runtime.submit` from any thread.
    open func start(_ job: Job<Value, Request>, runtime: Runtime) {
        fatalError("Loader.start must be overridden")
    }

    /// Runs once, on the loop thread, after the loader is retired and its
    /// last job has ended (or when the runtime closes).
    open func released(runtime: Runtime) {}

    /// How a cached entry (stored under `key` in `store`) serves a load of
    /// `request` at `nowMs`, for a loader that keeps rules of its own beside
    /// its values (the http loader); nil leaves it to the load's ages
    /// (`freshMs`). Loop thread; must not block.
    open func read(_ entry: CacheEntry, store: any CacheStore, key: [UInt8], request: Request, freshMs: UInt64,
                   nowMs: UInt64) -> CacheReading? {
        nil
    }

    /// A job of the loader was made (it may wait before it starts).
    func jobStarted() {
        activeJobs += 1
        metrics.jobStarted()
    }

    func jobEnded(runtime: Runtime) {
        activeJobs -= 1
        metrics.jobEnded()
        releaseIfIdle(runtime: runtime)
    }

    /// Whether the loader was taken out of use. Loop thread only.
    @usableFromInline package var isRetired: Bool { retired }

    /// Takes the loader out of use; it is released when its jobs are done.
    @usableFromInline package func retire(runtime: Runtime) {
        retired = true
        releaseIfIdle(runtime: runtime)
    }

    override func shutdown(runtime: Runtime) {
        releaseNow(runtime: runtime)
    }

    override var shutdownStage: ShutdownStage { .loaders }

    /// Releases the loader now, whatever its jobs do (runtime shutdown).
    func releaseNow(runtime: Runtime) {
        guard !isReleased else { return }
        isReleased = true
        if ownsAdmission { admission?.close() }
        released(runtime: runtime)
    }

    private func releaseIfIdle(runtime: Runtime) {
        if retired && activeJobs == 0 { releaseNow(runtime: runtime) }
    }
}
