import CLibUV

extension Cell {
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

    /// A refresh asks the loader, whatever the cache holds: a load that
    /// read its cache first (cache-first, cache-then-load) reloads without
    /// reading it, and stores the result. A cache-only load reads the cache
    /// again. `ticket` as for `load`.
    @_specialize(exported: true, where Value == [UInt8], Request == [UInt8])
    @usableFromInline package func refresh(ticket: UInt64 = 0) {
        reload(ticket: ticket)
    }

    /// `refresh`'s work (also a poll's).
    func reload(ticket: UInt64) {
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
}
