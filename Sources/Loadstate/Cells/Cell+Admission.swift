extension Cell {
    /// Loop, under the table lock (which the job takes anyway, to become
    /// visible to job calls): the job this cell waits for leaves its
    /// loader's queue. When the cell's load waits for `job` and shows
    /// QUEUED, the cell's latest event becomes the next event of the same
    /// state without the flag. It is changed in place, so that nothing of
    /// the state is copied, and `deliverAdmission` reports it once the lock
    /// is released: one acquisition of the lock for both, where an `emit`
    /// would take a second one.
    func publishAdmission(_ job: Job<Value, Request>) {
        guard session?.job === job, !isFreed, published.state.isQueued else { return }
        // The fields `makeEvent(.state, changed: false)` would give.
        published.type = .state
        published.seq += 1
        published.load = UInt64(session?.serial ?? 0)
        published.stateChanged = false
        published.isCancelled = false
        published.isWithoutValue = false
        published.elapsedMs = 0
        published.progressDone = 0
        published.progressTotal = 0
        published.state.isQueued = false
        admissionUndelivered = true
    }

    /// Loop: reports the event `publishAdmission` published, if it did.
    func deliverAdmission() {
        guard admissionUndelivered else { return }
        admissionUndelivered = false
        deliver(published)
    }

    /// Emits the current state again, flagged queued or not.
    func showQueued(_ queued: Bool) {
        if let event = queuedEvent(queued) { publish(event) }
    }

    /// The event of the current state flagged queued or not; nil when the
    /// state already says so.
    private func queuedEvent(_ queued: Bool) -> CellEvent<Value, Request>? {
        guard state.isQueued != queued else { return nil }
        var next = state
        next.isQueued = queued
        return makeEvent(.state, next, changed: false)
    }
}
