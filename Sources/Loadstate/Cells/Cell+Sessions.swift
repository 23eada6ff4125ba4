extension Cell {
    // The session and the spec are read field by field in the paths every
    // load takes (the spec as a borrowed argument): a copy of either
    // retains (and later releases) everything they hold.

    /// Starts the current session's next attempt of `spec` (`lastSpec`).
    ///
    /// A loader with limits (`Loader.admission`) may hold the job in its
    /// queue: the job exists (loads of its key join it) but its loader is
    /// not called until it is admitted. `shownQueued`: whether the event
    /// just emitted said the job waits; another event corrects it if not so.
    func startAttempt(_ spec: LoadSpec<Value, Request>, shownQueued: Bool = false) {
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
    func joinSharedJob(_ spec: LoadSpec<Value, Request>) -> Bool {
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
    func abandonSession() -> CellState<Value, Request>? {
        lookups &+= 1
        if let job = session?.job {
            job.leave(self)
        }
        guard let restore = session?.restore else { return nil }
        endSession(.cancelled)
        return restore
    }

    func forgetJob() {
        runtime.table.withLock { _ in clearCurrentJobLocked() }
    }

    /// For the job, with the table lock held: the cell no longer waits.
    func clearCurrentJobLocked() {
        currentJob = nil
        leaveMark = nil
    }

    func endSession(_ outcome: LoadOutcome) {
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
}
