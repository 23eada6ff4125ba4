/// The timers of a cell's loads, made the first time a load needs one:
/// loads without timeout, interrupts or retries carry none of this.
final class LoadTimers {
    var timeout: LoopTimer?
    var interrupt: LoopTimer?
    var retry: LoopTimer?
    /// The next refresh of a polling cell (kept across loads).
    var poll: LoopTimer?
    /// Index of the next interrupt delay of the current load.
    var nextInterrupt = 0
    /// When the next interrupt is due, in ms since the load began.
    var interruptDueMs: UInt64 = 0

    /// Arms the timer in `slot` (made on first use) to run `action` after
    /// `ms`. The action is set once per timer: re-arming allocates nothing.
    func arm(_ slot: inout LoopTimer?, loop: EventLoop, after ms: UInt64, _ action: @escaping () -> Void) {
        if let t = slot {
            t.restart(after: ms)
        } else {
            let t = LoopTimer(loop: loop.loop)
            slot = t
            t.start(after: ms, action)
        }
    }

    /// Stops every timer (a load ended).
    func stop() {
        timeout?.stop()
        interrupt?.stop()
        retry?.stop()
        nextInterrupt = 0
        interruptDueMs = 0
    }

    /// Releases every timer (the cell is freed).
    func close() {
        timeout?.close()
        interrupt?.close()
        retry?.close()
        poll?.close()
        timeout = nil
        interrupt = nil
        retry = nil
        poll = nil
    }
}
