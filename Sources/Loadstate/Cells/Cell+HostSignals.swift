extension Cell: OnlineWaiter, ForegroundTarget {
    /// The load's attempt waits for the runtime to be online.
    func parkOffline() {
        pausedOffline = true
        runtime.hostSignals.park(self)
    }

    func onlineResumed() {
        guard pausedOffline else { return }
        pausedOffline = false
        guard let s = session, s.job == nil, !isFreed, let spec = lastSpec else { return }
        if s.attempt > 1 {
            retry()
            return
        }
        // The first attempt: the same state, not paused, then the job.
        let queued = spec.loader.admission?.mustWait() ?? false
        var next = state
        next.isPaused = false
        next.isQueued = queued
        emit(.state, next, changed: false)
        startAttempt(spec, shownQueued: queued)
    }

    /// Refreshes silently when the last load asked to on returning to the
    /// foreground, the cell shows a loaded value older than the load's
    /// fresh time, no load runs, and the last such refresh is older than
    /// the load's throttle.
    func foregrounded(nowMs: UInt64) {
        guard !isFreed, flavor == .loadable, session == nil, let options = lastSpec?.options,
              options.refreshesOnForeground, state.status == .loaded, !state.isPartial else { return }
        let age = nowMs >= state.updatedAt ? nowMs - state.updatedAt : 0
        guard options.freshMs == 0 || age >= UInt64(options.freshMs) else { return }
        let throttle = UInt64(options.foregroundThrottleMs == 0 ? 5000 : options.foregroundThrottleMs)
        guard foregroundRefreshAtMs == 0 || nowMs < foregroundRefreshAtMs
              || nowMs - foregroundRefreshAtMs >= throttle else { return }
        foregroundRefreshAtMs = nowMs
        let failures = pollFailures
        reload(ticket: 0)
        pollFailures = failures
    }
}
