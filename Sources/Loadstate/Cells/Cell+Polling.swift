extension Cell {
    /// After a load ended (it failed when `failed`): with a refresh
    /// interval, the next refresh is due that long after now, or, after a
    /// failure with `pollsAfterError`, after the longer of the interval and
    /// the retry back-off of the failures in a row. A failure without
    /// `pollsAfterError` stops polling.
    func pollAfterLoad(failed: Bool) {
        guard let options = lastSpec?.options, options.refreshIntervalMs > 0, !isFreed, session == nil else { return }
        var delay = UInt64(options.refreshIntervalMs)
        if failed {
            guard options.pollsAfterError else { return }
            pollFailures = min(pollFailures &+ 1, 32)
            let exponent = UInt64(min(pollFailures - 1, 31))
            let backoff = min(UInt64(options.retryBaseMs) << exponent, UInt64(options.retryMaxMs))
            delay = max(delay, backoff)
        } else {
            pollFailures = 0
        }
        let t = loadTimers()
        t.arm(&t.poll, loop: runtime.loop, after: delay) { [unowned self] in pollDue() }
    }

    /// The poll timer fired: refresh, unless polling is paused (then wait
    /// for it to resume) or a load runs.
    private func pollDue() {
        guard !isFreed, session == nil, let options = lastSpec?.options else { return }
        if runtime.pollControl.isPaused || runtime.hostSignals.holdsPoll(options) {
            pollParked = true
            runtime.pollControl.park(self)
            return
        }
        let failures = pollFailures
        reload(ticket: 0)
        pollFailures = failures
    }

    /// Stops polling (a load, cancel, reset, set_* or free).
    func stopPolling() {
        timers?.poll?.stop()
        pollFailures = 0
        if pollParked {
            pollParked = false
            runtime.pollControl.unpark(self)
        }
    }
}

extension Cell: PollTarget {
    func pollResumed() {
        pollParked = false
        pollDue()
    }
}
