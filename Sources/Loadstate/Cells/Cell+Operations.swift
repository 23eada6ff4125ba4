extension Cell {
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
    func restoreLastSpec(_ box: SpecBox?, shown: CellState<Value, Request>) {
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
}
