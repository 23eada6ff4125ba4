extension Cell {
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
}
