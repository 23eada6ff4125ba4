/// A cell that polls: told when polling resumes if its refresh fell due
/// while polling was paused.
protocol PollTarget: AnyObject {
    func pollResumed()
}

/// The runtime-wide switch of polling (`LoadOptions.refreshIntervalMs`).
///
/// While paused, a cell whose refresh falls due does not refresh: it is
/// parked here, and refreshes when polling resumes. Loop thread only; the
/// runtime's `pausePolling` and `resumePolling` bring calls from any thread.
final class PollControl {
    private(set) var isPaused = false
    /// The cells whose refresh fell due while paused, in the order it did.
    private var parked: [ObjectIdentifier: PollTarget] = [:]
    private var order: [ObjectIdentifier] = []

    func pause() {
        isPaused = true
    }

    /// Resumes polling: every parked cell refreshes now, in the order its
    /// refresh fell due.
    func resume() {
        guard isPaused else { return }
        isPaused = false
        let due = order.compactMap { parked[$0] }
        parked = [:]
        order = []
        for target in due { target.pollResumed() }
    }

    /// Unless paused, every parked cell is told to poll again: those the
    /// host's signals still hold park again (see `HostSignals.holdsPoll`).
    func recheck() {
        guard !isPaused, !order.isEmpty else { return }
        let due = order.compactMap { parked[$0] }
        parked = [:]
        order = []
        for target in due { target.pollResumed() }
    }

    func park(_ target: PollTarget) {
        let key = ObjectIdentifier(target)
        if parked.updateValue(target, forKey: key) == nil { order.append(key) }
    }

    func unpark(_ target: PollTarget) {
        guard !parked.isEmpty, parked.removeValue(forKey: ObjectIdentifier(target)) != nil else { return }
        order.removeAll { $0 == ObjectIdentifier(target) }
    }
}

extension Runtime {
    /// Any thread: pauses every cell's polling from now on (a refresh that
    /// falls due waits for `resumePolling`). Loads under way go on.
    public func pausePolling() {
        loop.execute { [self] in pollControl.pause() }
    }

    /// Any thread: resumes polling; cells whose refresh fell due meanwhile
    /// refresh at once.
    public func resumePolling() {
        loop.execute { [self] in pollControl.resume() }
    }
}
