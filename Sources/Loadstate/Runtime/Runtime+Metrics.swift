import CLibUV

/// A loader's metrics, whatever its Value and Request types.
protocol MetricsSource: AnyObject {
    var metrics: LoadMetrics { get }
    var name: String? { get }
}

extension Loader: MetricsSource {}

extension Runtime {
    /// Loop thread: a loader's limits queued `job` (metrics on).
    func noteQueued<Value, Request>(_ job: Job<Value, Request>) {
        job.queuedAtNs = uv_hrtime()
        metrics.jobQueued(job.loader.metrics)
    }

    /// Loop thread: a queued job is admitted: its wait is measured.
    func noteAdmitted<Value, Request>(_ job: Job<Value, Request>) {
        metrics.jobAdmitted(job.loader.metrics, queuedAtNs: job.queuedAtNs)
        job.queuedAtNs = 0
    }

    /// The runtime's metrics now. Any thread; the table lock is held while
    /// the live loaders and caches are listed (not while a persistent
    /// cache's counters are read). Each counter is read whole; counters
    /// the loop thread changes meanwhile may be seen before or after.
    @usableFromInline package func statistics() -> RuntimeStatistics {
        var out = RuntimeStatistics()
        out.isEnabled = metrics.isEnabled
        out.isOnline = hostSignals.online
        out.isForeground = hostSignals.foreground
        out.loadsPaused = hostSignals.pausedNow
        out.loadsPausedTotal = hostSignals.pausedTotal
        // The loaders themselves: held, their counters stay allocated.
        var loaders: [(UInt64, MetricsSource)] = []
        var caches: [(UInt64, any CacheStore)] = []
        var cells: UInt64 = 0
        table.withLock { storage in
            storage.handles.forEach(where: { id in
                let kind = Handle.kind(of: id)
                return kind == .loader || kind == .cache
            }) { id, handle in
                switch Handle.kind(of: id) {
                case .loadable?, .process?: cells += 1
                default:
                    if let source = handle as? MetricsSource { loaders.append((id, source)) }
                    if let store = handle as? any CacheStore { caches.append((id, store)) }
                }
            }
        }
        out.cellsAlive = cells
        // The loaders first, then the totals: the totals count a load
        // before its loader does, so they are never behind the loaders.
        var jobsStarted: UInt64 = 0, jobsEnded: UInt64 = 0
        for (id, source) in loaders.sorted(by: { $0.0 < $1.0 }) {
            let counters = source.metrics.snapshot()
            jobsStarted &+= counters.jobsStarted
            jobsEnded &+= counters.jobsEnded
            out.loaders.append(.init(id: id, name: source.name, loads: counters))
        }
        out.eventsDelivered = metrics.eventsDelivered
        out.loads = metrics.loads.snapshot()
        // Jobs are counted per loader; the runtime's are those of its loaders alive.
        out.loads.jobsStarted = jobsStarted
        out.loads.jobsEnded = jobsEnded
        for (id, store) in caches.sorted(by: { $0.0 < $1.0 }) {
            // A cache closed meanwhile is left out.
            guard let stats = try? store.stats() else { continue }
            out.caches.append(.init(id: id, kind: store is PersistentCache ? .persistent : store is RedisCache ? .redis : .memory, stats: stats))
        }
        return out
    }

    /// The runtime's metrics (see `statistics()`) in the Prometheus text
    /// exposition format, version 0.0.4: what a host serves on its
    /// `/metrics` (content type `text/plain; version=0.0.4`). Any thread.
    ///
    /// Families: `loadstate_loads_started_total`,
    /// `loadstate_loads_ended_total` (by `outcome`),
    /// `loadstate_load_retries_total`, `loadstate_loads_shared_total`,
    /// `loadstate_jobs_started_total`, `loadstate_jobs_in_flight`, the
    /// histogram `loadstate_load_duration_seconds` and the longest load
    /// `loadstate_load_duration_max_seconds`, each by
    /// `loader` (the loader's name, escaped, else its id; `freed` for
    /// loaders freed since; loaders of one name share a series);
    /// `loadstate_cells_alive`,
    /// `loadstate_events_delivered_total`, `loadstate_metrics_enabled`;
    /// and `loadstate_cache_*` by `cache` and `kind`.
    public func metricsText() -> String {
        statistics().prometheusText
    }
}
