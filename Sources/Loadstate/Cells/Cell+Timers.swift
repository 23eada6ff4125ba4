import CLibUV

extension Cell {
    func loadTimers() -> LoadTimers {
        if let t = timers { return t }
        let t = LoadTimers()
        timers = t
        return t
    }

    func armTimers(timeoutMs: UInt32, interrupts: Bool) {
        if timeoutMs > 0 {
            let t = loadTimers()
            t.arm(&t.timeout, loop: runtime.loop, after: UInt64(timeoutMs)) { [unowned self] in timedOut() }
        }
        if interrupts {
            armNextInterrupt()
        }
    }

    private func armNextInterrupt() {
        guard let s = session, let delays = lastSpec?.options.interruptsMs else { return }
        let t = loadTimers()
        guard t.nextInterrupt < delays.count else { return }
        t.interruptDueMs += UInt64(delays[t.nextInterrupt])
        t.nextInterrupt += 1
        armInterruptTimer(due: t.interruptDueMs, startedAtNs: s.startedAtNs)
    }

    private func armInterruptTimer(due: UInt64, startedAtNs: UInt64) {
        let elapsedNs = uv_hrtime() - startedAtNs
        let dueNs = due * 1_000_000
        let wait = dueNs > elapsedNs ? (dueNs - elapsedNs + 999_999) / 1_000_000 : 0
        let t = loadTimers()
        t.arm(&t.interrupt, loop: runtime.loop, after: wait) { [unowned self] in interrupted() }
    }

    private func interrupted() {
        guard let s = session, let t = timers, !isFreed else { return }
        var elapsedNs = uv_hrtime() - s.startedAtNs
        // libuv timers have millisecond granularity: never report early.
        if elapsedNs < t.interruptDueMs * 1_000_000 {
            armInterruptTimer(due: t.interruptDueMs, startedAtNs: s.startedAtNs)
            return
        }
        emit(.interrupt, elapsedMs: elapsedNs / 1_000_000)
        // Interrupts already due (the loop was late) are reported now, in
        // order, before any later timer of the load (its timeout) runs.
        let delays = lastSpec?.options.interruptsMs ?? []
        while t.nextInterrupt < delays.count,
              t.interruptDueMs + UInt64(delays[t.nextInterrupt]) <= elapsedNs / 1_000_000 {
            t.interruptDueMs += UInt64(delays[t.nextInterrupt])
            t.nextInterrupt += 1
            emit(.interrupt, elapsedMs: elapsedNs / 1_000_000)
            elapsedNs = uv_hrtime() - s.startedAtNs
        }
        armNextInterrupt()
    }

    private func timedOut() {
        guard let s = session, let timeoutMs = lastSpec?.options.timeoutMs else { return }
        // libuv timers have millisecond granularity: never time out early.
        let elapsedNs = uv_hrtime() - s.startedAtNs
        let dueNs = UInt64(timeoutMs) * 1_000_000
        if elapsedNs < dueNs {
            let t = loadTimers()
            t.arm(&t.timeout, loop: runtime.loop, after: (dueNs - elapsedNs + 999_999) / 1_000_000) {
                [unowned self] in timedOut()
            }
            return
        }
        failLoad(UInt64(s.serial), with: LoadError(.timedOut, underlying: TimeoutError()))
    }

    /// Waits before the next attempt: `afterMs` when the failure said how
    /// long, otherwise a random time up to base × 2^(attempt-1) ("full
    /// jitter"); never more than the maximum back-off.
    func scheduleRetry(afterMs: UInt64?) {
        guard var s = session, let options = lastSpec?.options else { return }
        let delay: UInt64
        if let afterMs {
            delay = min(afterMs, UInt64(options.retryMaxMs))
        } else {
            let exponent = min(s.attempt - 1, 31)
            let ceiling = min(UInt64(options.retryBaseMs) << UInt64(exponent), UInt64(options.retryMaxMs))
            delay = ceiling == 0 ? 0 : UInt64.random(in: 0...ceiling, using: &rng)
        }
        s.attempt += 1
        s.job = nil
        session = s
        if runtime.metrics.isEnabled, let loader = lastSpec?.loader { runtime.metrics.loadRetried(loader.metrics) }
        forgetJob()
        let t = loadTimers()
        t.arm(&t.retry, loop: runtime.loop, after: delay) { [unowned self] in retry() }
    }

    func retry() {
        guard let s = session, s.job == nil, !isFreed, !pausedOffline, let spec = lastSpec else { return }
        if runtime.hostSignals.holdsLoad(spec.options.offlineMode) {
            // Offline: the retry fails at once, or waits to be online.
            if spec.options.offlineMode == .fail {
                failLoad(UInt64(s.serial), with: LoadError(.offline, message: "the runtime is offline"))
                return
            }
            var next = state
            next.attempt = s.attempt
            next.isPaused = true
            parkOffline()
            emit(.state, next, changed: false)
            return
        }
        var next = state
        next.attempt = s.attempt
        next.isPaused = false
        let queued = spec.loader.admission?.mustWait() ?? false
        next.isQueued = queued
        emit(.state, next, changed: !spec.options.silent)
        startAttempt(spec, shownQueued: queued)
    }
}
