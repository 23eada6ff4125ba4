extension Cell {
    /// Emits an event; with `newState`, the cell takes that state first.
    func emit(_ type: EventType, _ newState: consuming CellState<Value, Request>? = nil, changed: Bool = true,
                      cancelled: Bool = false, elapsedMs: UInt64 = 0, progress: (UInt64, UInt64) = (0, 0)) {
        publish(makeEvent(type, newState, changed: changed, cancelled: cancelled, elapsedMs: elapsedMs,
                          progress: progress))
    }

    /// Makes `event` the cell's latest (under the table lock, for other
    /// threads' reads) and reports it.
    func publish(_ event: CellEvent<Value, Request>) {
        runtime.table.withLock { _ in published = event }
        if event.type == .state, runtime.inspector != nil { recordForInspector(event) }
        // An admission event not reported yet is superseded by this one.
        admissionUndelivered = false
        deliver(event)
    }

    /// The next event, not yet published.
    func makeEvent(_ type: EventType, _ newState: consuming CellState<Value, Request>? = nil,
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
    func deliver(_ event: CellEvent<Value, Request>) {
        if !isFreed {
            if runtime.metrics.isEnabled { runtime.metrics.eventDelivered() }
            observer.cellEvent(self, event)
            if observedAs == nil { runtime.observer?.cellEvent(self, event) }
        }
    }

    /// Loop: shows `next` without ending the load under way (a write's
    /// optimistic value, or what its rollback brings back, flagged
    /// `rolledBack`: see `OptimisticLedger`).
    func showWritten(_ next: CellState<Value, Request>, rolledBack: Bool) {
        guard !isFreed else { return }
        var event = makeEvent(.state, next)
        event.isRolledBack = rolledBack
        publish(event)
    }
}
